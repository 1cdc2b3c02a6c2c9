package cudarttest

// mapNoReserve is zero on macOS, which does not reserve swap for anonymous
// mappings anyway.
const mapNoReserve = 0
