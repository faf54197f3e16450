// Inputs hold no tests: this RUN line does not count.
// RUN: pf-opt %s -pf-uncovered
