package main

import (
	"context"
	"time"
)

// backend runs one request of rows batch rows: x fills the staging buffer
// it is handed with the input and reads the output from its buffer. client
// is the load generator's client, for the backends that keep state per
// client. waited is how long the request waited for what the backend
// shares between requests (a slot, the mutex); zero where it shares
// nothing.
type backend interface {
	serve(ctx context.Context, client, rows int, x exchange) (waited time.Duration, err error)
	memory() string
	close() error
}
