// Command quickstart plans the buffers of a small inference pipeline in a
// cudapool pool, moves data through them and prints the layout.
//
//	go run ./examples/quickstart [-runtime=auto|cuda|fake]
//
// The pipeline: a pinned input staging buffer, the device input, two
// activation buffers, the device output and a pinned output buffer. The data
// goes host to device, device to device, and device to host, and the result
// is checked byte for byte. By default (-runtime empty: $CUDAPOOL_RUNTIME,
// else auto) it uses CUDA when the library loads and sees a device, else the
// fake runtime, and says which.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/dustin/go-humanize"

	"github.com/cudapool/cudapool/choose"
	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/examples/cli"
	"github.com/cudapool/cudapool/pool"
)

func main() { cli.Main(run) }

func run(args []string, stdout, stderr io.Writer) int {
	cmd := cli.New("quickstart", about, stderr)
	which := cmd.Runtime()
	if code, exit := cmd.ParseArgs(args); exit {
		return code
	}
	rt, err := choose.Open(*which)
	if err != nil {
		return cmd.Fail(1, err)
	}
	defer rt.Close()
	fmt.Fprintf(stdout, "runtime: %s\n\n", rt.Description)
	if err := pipeline(rt, stdout); err != nil {
		return cmd.Fail(1, err)
	}
	return 0
}

const inputBytes = 3 * 224 * 224 * 4 // one fp32 image

func pipeline(rt cudart.Runtime, out io.Writer) (err error) {
	p, err := pool.New(rt, pool.WithDeviceBytes(64<<20), pool.WithHostBytes(8<<20))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, p.Close()) }()

	bufs := make(map[string]*pool.Buffer)
	// Step 0 copies the input in, steps 1 to 3 run the layers, step 4
	// copies the output out. A device buffer lives from the step that
	// writes it to the last that reads it, so buffers never alive together
	// share bytes; the staging buffers live throughout.
	for _, w := range []struct {
		name        string
		arena       pool.Arena
		size        uint64
		first, last int
	}{
		{"input.staging", pool.Host, inputBytes, 0, 0},
		{"input", pool.Device, inputBytes, 0, 1},
		{"conv1.out", pool.Device, 64 * 112 * 112 * 4, 1, 2},
		{"conv2.out", pool.Device, 128 * 56 * 56 * 4, 2, 3},
		{"output", pool.Device, inputBytes, 3, 4},
		{"output.staging", pool.Host, inputBytes, 0, 0},
	} {
		want, opts := p.WantDevice, []pool.WantOption{pool.Name(w.name), pool.Live(w.first, w.last)}
		if w.arena == pool.Host {
			want, opts = p.WantHost, opts[:1]
		}
		b, err := want(w.size, opts...)
		if err != nil {
			return err
		}
		bufs[w.name] = b
	}
	if err := p.Commit(); err != nil {
		return err
	}

	in, err := bufs["input.staging"].Bytes()
	if err != nil {
		return err
	}
	res, err := bufs["output.staging"].Bytes()
	if err != nil {
		return err
	}
	for i := range in {
		in[i] = byte(i * 31)
	}
	// The "model" copies its input through the activations to its output.
	mem := map[string]cudart.Mem{"input.staging": cudart.HostMem(in), "output.staging": cudart.HostMem(res)}
	for _, name := range []string{"input", "conv1.out", "conv2.out", "output"} {
		ptr, err := bufs[name].Ptr()
		if err != nil {
			return err
		}
		mem[name] = cudart.DeviceMem(ptr, inputBytes)
	}
	for _, s := range []struct {
		from, to string
		kind     cudart.MemcpyKind
	}{
		{"input.staging", "input", cudart.HostToDevice},
		{"input", "conv1.out", cudart.DeviceToDevice},
		{"conv1.out", "conv2.out", cudart.DeviceToDevice},
		{"conv2.out", "output", cudart.DeviceToDevice},
		{"output", "output.staging", cudart.DeviceToHost},
	} {
		if err := rt.Memcpy(p.Device(), mem[s.to], mem[s.from], s.kind); err != nil {
			return fmt.Errorf("copy %s -> %s: %w", s.from, s.to, err)
		}
	}
	if !bytes.Equal(res, in) {
		return errors.New("the output differs from the input after the round trip")
	}
	fmt.Fprintf(out, "moved %s host -> device -> device -> host: output matches input\n\n", humanize.IBytes(inputBytes))
	printLayout(out, p)
	return nil
}

func printLayout(out io.Writer, p *pool.Pool) {
	fmt.Fprint(out, p.Layout())
	st := p.Stats()
	fmt.Fprintf(out, "\ndevice arena: %s used of %s (%d buffers); %s without sharing, %s saved by lifetimes\n",
		humanize.IBytes(st.Device.Used), humanize.IBytes(st.Device.Capacity), st.Device.Placed,
		humanize.IBytes(st.Device.Unshared), humanize.IBytes(st.Device.Saved))
	fmt.Fprintf(out, "host arena:   %s used of %s (%d buffers)\n",
		humanize.IBytes(st.Host.Used), humanize.IBytes(st.Host.Capacity), st.Host.Placed)
}

// about is what -h prints before the flags.
const about = `quickstart plans the buffers of a small inference pipeline in a cudapool
pool (pinned staging buffers, device buffers that share memory by lifetime),
moves data host to device, through the device and back, checks it byte for
byte, and prints the layout. It uses CUDA when the library loads and sees a
device, else the fake runtime, and says which.`
