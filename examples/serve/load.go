package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cudapool/cudapool/pool"
)

// workload is the requests the load generator sends: request i has
// mix[i%len(mix)] rows and one of a few inputs, whose outputs the CPU
// computed once.
type workload struct {
	mix    []int
	inputs map[int][][]byte // by rows: the inputs
	want   map[int][][]byte // by rows: their outputs
}

// variants is how many different inputs each batch size has.
const variants = 8

func newWorkload(m *model, mix []int) *workload {
	w := &workload{mix: mix, inputs: map[int][][]byte{}, want: map[int][][]byte{}}
	for _, rows := range mix {
		if w.inputs[rows] != nil {
			continue
		}
		for v := range variants {
			in := make([]float32, int(m.n)*rows)
			for i := range in {
				in[i] = float32((i*(v+3))%2001-1000) / 1000
			}
			w.inputs[rows] = append(w.inputs[rows], floatBytes(in))
			w.want[rows] = append(w.want[rows], floatBytes(m.reference(in)))
		}
	}
	return w
}

// request is request i's rows, input and expected output.
func (w *workload) request(i int) (rows int, in, want []byte) {
	rows = w.mix[i%len(w.mix)]
	v := i / len(w.mix) % variants
	return rows, w.inputs[rows][v], w.want[rows][v]
}

// result is one measured configuration.
type result struct {
	name      string
	requests  int
	elapsed   time.Duration
	p50, p99  time.Duration
	perSecond float64
}

// load runs requests requests from clients goroutines, each sending its
// next request once the last is answered, and stops by itself. do sends
// request i for client c and checks the answer.
func load(clients, requests int, do func(c, i int) error) (result, error) {
	lat := make([]time.Duration, requests)
	var next atomic.Int64
	var failed atomic.Bool
	errs := make([]error, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= requests {
					return
				}
				t0 := time.Now()
				if err := do(c, i); err != nil {
					errs[c] = fmt.Errorf("request %d: %w", i, err)
					failed.Store(true)
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return result{}, err
	}
	slices.Sort(lat)
	return result{
		requests: requests, elapsed: elapsed,
		p50: lat[len(lat)/2], p99: lat[min(len(lat)-1, len(lat)*99/100)],
		perSecond: float64(requests) / elapsed.Seconds(),
	}, nil
}

// inProcess sends request i straight to the backend.
func inProcess(b backend, w *workload) func(c, i int) error {
	return func(c, i int) error {
		rows, in, want := w.request(i)
		return b.serve(context.Background(), c, rows,
			func(staging []byte) error { copy(staging, in); return nil },
			func(out []byte) error {
				if !bytes.Equal(out[:len(want)], want) {
					return mismatch(out[:len(want)], want)
				}
				return nil
			})
	}
}

// handler is the HTTP front of a backend: POST /infer?rows=R with R rows of
// little-endian float32 as the body answers with the output rows.
// X-Client names the load generator's client, for the backend with a
// stream per client.
func handler(b backend, rowBytes int, vars http.Handler) http.Handler {
	mux := http.NewServeMux()
	bufs := sync.Pool{New: func() any { return new([]byte) }}
	mux.HandleFunc("POST /infer", func(w http.ResponseWriter, r *http.Request) {
		rows, err := strconv.Atoi(r.URL.Query().Get("rows"))
		client, cerr := strconv.Atoi(r.Header.Get("X-Client"))
		if err != nil || cerr != nil || rows < 1 || r.ContentLength != int64(rows*rowBytes) {
			http.Error(w, "want ?rows=R, an X-Client header and R rows of float32 as the body", http.StatusBadRequest)
			return
		}
		// Read before a slot is taken and answered after it is given
		// back: the network holds no slot.
		bp := bufs.Get().(*[]byte)
		defer bufs.Put(bp)
		body := slices.Grow((*bp)[:0], rows*rowBytes)[:rows*rowBytes]
		*bp = body
		if _, err := io.ReadFull(r.Body, body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		err = b.serve(r.Context(), client, rows,
			func(staging []byte) error { copy(staging, body); return nil },
			func(out []byte) error { copy(body, out); return nil })
		switch {
		case errors.Is(err, pool.ErrUnknownProfile):
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(body)
	})
	mux.Handle("GET /debug/vars", vars)
	return mux
}

// listenLoopback serves h on a free port of the loopback interface and
// returns its URL and what stops it.
func listenLoopback(h http.Handler) (string, func() error, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	stop := func() error {
		err := srv.Close()
		if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		return err
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// overHTTP sends request i to the server at url, as client c.
func overHTTP(url string, clients int, w *workload) func(c, i int) error {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true}}
	bufs := make([]bytes.Buffer, clients)
	return func(c, i int) error {
		rows, in, want := w.request(i)
		req, err := http.NewRequest(http.MethodPost, url+"/infer?rows="+strconv.Itoa(rows), bytes.NewReader(in))
		if err != nil {
			return err
		}
		req.Header.Set("X-Client", strconv.Itoa(c))
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		buf := &bufs[c]
		buf.Reset()
		if _, err := buf.ReadFrom(resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %s: %s", resp.Status, bytes.TrimSpace(buf.Bytes()))
		}
		if !bytes.Equal(buf.Bytes(), want) {
			return mismatch(buf.Bytes(), want)
		}
		return nil
	}
}
