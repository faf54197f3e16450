// RUN: pf-opt %s -pf-covered="opt=1" | FileCheck %s
// RUN: pf-opt %s -pf-pipeline="pf-only-in-pipeline" | FileCheck %s
// RUN: pf-opt %s \
// RUN:   --pf-continued | FileCheck %s
// pf-uncovered is named in a comment but in no RUN line.
