//===- AutodiffInterface.cpp - reverse-mode gradient rules ----------------===//

#include "pf/Interfaces/AutodiffInterface.h"

#include "pf/Interfaces/AutodiffInterface.cpp.inc"
