// Package streamdev asks which device a stream belongs to, for the packages
// that refuse another device's stream before CUDA sees it (pool, kvcache,
// cublas), with one rule for a runtime that cannot tell.
package streamdev

import (
	"errors"

	"github.com/cudapool/cudapool/cudart"
)

// Of is the device of stream s, asked of rt on device's behalf
// (cudart.Streams.StreamDevice). known is false, and the stream is to be
// taken, where rt cannot tell: a runtime that is no cudart.Streams, or one
// before CUDA 12.8 asked of a stream it did not make (cudart.ErrNotSupported).
// Any other failure is err, with known true.
func Of(rt any, device int, s cudart.Stream) (d int, known bool, err error) {
	st, ok := rt.(cudart.Streams)
	if !ok {
		return 0, false, nil
	}
	d, err = st.StreamDevice(device, s)
	if errors.Is(err, cudart.ErrNotSupported) {
		return 0, false, nil
	}
	return d, true, err
}
