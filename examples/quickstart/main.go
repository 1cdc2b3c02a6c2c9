// Command quickstart plans the buffers of a small inference pipeline in a
// cudapool pool, moves data through them and prints the layout.
//
//	go run ./examples/quickstart [-runtime=auto|cuda|fake]
//
// The pipeline: a pinned input staging buffer, the device input, two
// activation buffers, the device output and a pinned output buffer. The data
// goes host to device, device to device, and device to host, and the result
// is checked byte for byte. With -runtime=auto (the default) it uses CUDA when
// the library loads and sees a device, else the fake runtime, and says which.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/cudapool/cudapool/cudart"
	"github.com/cudapool/cudapool/cudart/cudarttest"
	"github.com/cudapool/cudapool/internal/bytesize"
	"github.com/cudapool/cudapool/pool"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	fs.SetOutput(stderr)
	which := fs.String("runtime", "auto", "CUDA runtime to use: "+cudarttest.Modes)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	rt, err := cudarttest.OpenMode(*which)
	if err != nil {
		fmt.Fprintf(stderr, "quickstart: %v\n", err)
		return 1
	}
	defer rt.Close()
	fmt.Fprintf(stdout, "runtime: %s\n\n", rt.Description)
	if err := pipeline(rt, stdout); err != nil {
		fmt.Fprintf(stderr, "quickstart: %v\n", err)
		return 1
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
	for _, w := range []struct {
		name  string
		arena pool.Arena
		size  uint64
	}{
		{"input.staging", pool.Host, inputBytes},
		{"input", pool.Device, inputBytes},
		{"conv1.out", pool.Device, 64 * 112 * 112 * 4},
		{"conv2.out", pool.Device, 128 * 56 * 56 * 4},
		{"output", pool.Device, inputBytes},
		{"output.staging", pool.Host, inputBytes},
	} {
		want := p.WantDevice
		if w.arena == pool.Host {
			want = p.WantHost
		}
		b, err := want(w.size, pool.Name(w.name))
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
	fmt.Fprintf(out, "moved %s host -> device -> device -> host: output matches input\n\n", bytesize.Format(inputBytes))
	printLayout(out, p)
	return nil
}

func printLayout(out io.Writer, p *pool.Pool) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "arena\tbuffer\toffset\tsize\t")
	for _, pl := range p.Layout() {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t\n", pl.Arena, pl.Name, pl.Offset, bytesize.Format(pl.Size))
	}
	_ = tw.Flush()
	st := p.Stats()
	fmt.Fprintf(out, "\ndevice arena: %s used of %s (%d buffers, %s padding)\n",
		bytesize.Format(st.Device.Used), bytesize.Format(st.Device.Capacity), st.Device.Placed, bytesize.Format(st.Device.Padding))
	fmt.Fprintf(out, "host arena:   %s used of %s (%d buffers, %s padding)\n",
		bytesize.Format(st.Host.Used), bytesize.Format(st.Host.Capacity), st.Host.Placed, bytesize.Format(st.Host.Padding))
}
