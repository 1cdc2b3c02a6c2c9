package cudarttest

import "syscall"

const mapNoReserve = syscall.MAP_NORESERVE
