// ruff's linter (its WebAssembly build, npm @astral-sh/ruff-wasm-nodejs)
// with the repository's ruff.toml, for the machines that have no ruff binary
// (Debian 12 packages none; PyPI is not reachable). scripts/lint.sh installs
// the package and runs this; by hand:
//
//   node scripts/ruff.js [--fix CODE,... | --list] CONFIG.json FILE...
//
// CONFIG.json is ruff.toml as JSON (scripts/lint.sh converts it with
// python3's tomllib). The settings are ruff's own: the WebAssembly workspace
// rejects an unknown key. What it cannot do without a file system, this does
// here: `exclude`/`extend-exclude` (files that match are skipped) and
// `lint.per-file-ignores`/`lint.extend-per-file-ignores`, with patterns
// relative to the repository root. (isort's first-party detection reads no
// directories: `lint.isort.known-first-party` names the project's packages.)
//
// Prints "path:row:col: CODE message" for every finding and exits 1 if there
// was one. --fix applies the fixes ruff offers for the named codes (e.g.
// I001,F401) and writes the files back; it prints what is left. --list
// prints the files it would check (those the configuration does not exclude).
"use strict";
const fs = require("fs");
const path = require("path");
const { Workspace, PositionEncoding } = require("@astral-sh/ruff-wasm-nodejs");

function globToRegExp(glob) {
  let re = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "*" && glob[i + 1] === "*") {
      re += ".*";
      i++;
      if (glob[i + 1] === "/") i++;
    } else if (c === "*") {
      re += "[^/]*";
    } else if (c === "?") {
      re += "[^/]";
    } else {
      re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
    }
  }
  return new RegExp("^" + re + "$");
}

// ruff's rule for exclude patterns: one without a slash matches any file or
// directory of that name; one with a slash matches a path from the root.
function matches(pattern, rel) {
  const re = globToRegExp(pattern.replace(/^\.\//, "").replace(/\/$/, ""));
  const parts = rel.split("/");
  if (!pattern.includes("/")) return parts.some((p) => re.test(p));
  for (let n = 1; n <= parts.length; n++) {
    if (re.test(parts.slice(0, n).join("/"))) return true;
  }
  return false;
}

function main(argv) {
  let fixCodes = [];
  let list = false;
  if (argv[0] === "--fix") {
    fixCodes = argv[1].split(",");
    argv = argv.slice(2);
  } else if (argv[0] === "--list") {
    list = true;
    argv = argv.slice(1);
  }
  if (argv.length < 1) {
    console.error("usage: node scripts/ruff.js [--fix CODE,... | --list] CONFIG.json FILE...");
    return 2;
  }
  const root = path.resolve(__dirname, "..");
  const options = JSON.parse(fs.readFileSync(argv[0], "utf8"));
  const exclude = [...(options.exclude || []), ...(options["extend-exclude"] || [])];
  const lint = options.lint || {};
  const ignores = Object.entries({
    ...(lint["per-file-ignores"] || {}),
    ...(lint["extend-per-file-ignores"] || {}),
  });
  const workspace = new Workspace(options, PositionEncoding.Utf8);

  let findings = 0;
  for (const file of argv.slice(1)) {
    const rel = path.relative(root, path.resolve(file)).split(path.sep).join("/");
    if (exclude.some((p) => matches(p, rel))) continue;
    if (list) {
      console.log(file);
      continue;
    }
    const ignored = ignores.filter(([p]) => matches(p, rel)).flatMap(([, c]) => c);
    const keep = (d) => !d.code || !ignored.some((c) => d.code.startsWith(c));
    let text;
    try {
      text = fs.readFileSync(file, "utf8");
    } catch (err) {
      console.error(`${file}: ${err.message}`);
      return 2;
    }
    let diagnostics = workspace.check(text).filter(keep);
    if (fixCodes.length) {
      const fixed = applyFixes(text, diagnostics.filter((d) => fixCodes.includes(d.code)));
      if (fixed !== text) {
        fs.writeFileSync(file, fixed);
        text = fixed;
        diagnostics = workspace.check(text).filter(keep);
      }
    }
    diagnostics.sort((a, b) => a.start_location.row - b.start_location.row ||
      a.start_location.column - b.start_location.column);
    for (const d of diagnostics) {
      findings++;
      console.log(`${file}:${d.start_location.row}:${d.start_location.column}: ` +
        `${d.code || "error"} ${d.message}`);
    }
  }
  return findings ? 1 : 0;
}

// The fixes, applied from the end of the file; a fix whose edits overlap
// one already applied waits for a later run.
function applyFixes(text, diagnostics) {
  const lines = text.split("\n");
  const starts = [0];
  for (const l of lines) starts.push(starts[starts.length - 1] + Buffer.byteLength(l) + 1);
  const offset = (loc) => starts[loc.row - 1] + loc.column - 1;
  const fixes = diagnostics.filter((d) => d.fix && d.fix.edits.length).map((d) => {
    const edits = d.fix.edits.map((e) =>
      [offset(e.location), offset(e.end_location), e.content || ""]);
    edits.sort((a, b) => b[0] - a[0]);
    return { first: edits[edits.length - 1][0], last: Math.max(...edits.map((e) => e[1])), edits };
  });
  fixes.sort((a, b) => b.first - a.first);
  let buf = Buffer.from(text);
  let limit = Infinity;
  for (const fix of fixes) {
    if (fix.last > limit) continue;
    for (const [s, e, content] of fix.edits) {
      buf = Buffer.concat([buf.subarray(0, s), Buffer.from(content), buf.subarray(e)]);
    }
    limit = fix.first;
  }
  return buf.toString();
}

process.exitCode = main(process.argv.slice(2));
