#!/bin/sh
# env_per_rank.sh SRC DST LINE: copies the artifacts SRC to DST and wraps
# each rank<r> executable in a script that runs LINE (with @R@ replaced by
# r; an export, say) and then execs the real executable (the same process:
# the one the launcher started). For per-rank environments, as a launcher
# that binds each task to its own GPU gives them.
src=$1 dst=$2 line=$3
rm -rf "$dst"
cp -r "$src" "$dst"
for exe in "$dst"/rank[0-9]*; do
  r=${exe##*/rank}
  mv "$exe" "$exe.real"
  printf '#!/bin/sh\n%s\nexec "$0.real" "$@"\n' \
    "$(printf '%s' "$line" | sed "s/@R@/$r/g")" >"$exe"
  chmod +x "$exe"
done
