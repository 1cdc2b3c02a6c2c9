package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cudapool/cudapool/pool"
)

// handler is the HTTP front of a backend: POST /infer?rows=R with R rows of
// little-endian float32 as the body answers with the output rows, and says
// in a Server-Timing header ("wait;dur=" and milliseconds) how long the
// request waited for what the backend shares. X-Client names the load
// generator's client, for the backends with state per client.
func handler(b backend, rowBytes int, vars http.Handler) http.Handler {
	mux := http.NewServeMux()
	bodies := sync.Pool{New: func() any { return new(bodyExchange) }}
	mux.HandleFunc("POST /infer", func(w http.ResponseWriter, r *http.Request) {
		rows, err := strconv.Atoi(r.URL.Query().Get("rows"))
		client, cerr := strconv.Atoi(r.Header.Get("X-Client"))
		if err != nil || cerr != nil || rows < 1 || r.ContentLength != int64(rows*rowBytes) {
			http.Error(w, "want ?rows=R, an X-Client header and R rows of float32 as the body", http.StatusBadRequest)
			return
		}
		// Read before a slot is taken and answered after it is given
		// back: the network holds no slot. The copies in and out of the
		// staging buffers are the server's, as in any server that
		// stages its requests.
		x := bodies.Get().(*bodyExchange)
		defer bodies.Put(x)
		x.body = slices.Grow(x.body[:0], rows*rowBytes)[:rows*rowBytes]
		if _, err := io.ReadFull(r.Body, x.body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		waited, err := b.serve(r.Context(), client, rows, x)
		switch {
		case errors.Is(err, pool.ErrUnknownProfile):
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Server-Timing", "wait;dur="+strconv.FormatFloat(float64(waited)/float64(time.Millisecond), 'f', 6, 64))
		_, _ = w.Write(x.body)
	})
	mux.Handle("GET /debug/vars", vars)
	return mux
}

// bodyExchange stages a request's body and returns the output in it.
type bodyExchange struct{ body []byte }

func (x *bodyExchange) fill(staging []byte) error {
	copy(staging, x.body)
	return nil
}

func (x *bodyExchange) read(out []byte) error {
	copy(x.body, out)
	return nil
}

// serverWait is the wait a response's Server-Timing header reports.
func serverWait(h http.Header) (time.Duration, error) {
	v, ok := strings.CutPrefix(h.Get("Server-Timing"), "wait;dur=")
	ms, err := strconv.ParseFloat(v, 64)
	if !ok || err != nil {
		return 0, fmt.Errorf("Server-Timing %q: want wait;dur= and milliseconds", h.Get("Server-Timing"))
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
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

// overHTTP sends request i to the server at url, as client c, and checks
// the whole output when full is set, else samples of it.
func overHTTP(url string, clients int, w *workload, full bool) func(c, i int) (time.Duration, error) {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true}}
	bufs := make([]bytes.Buffer, clients)
	k := newChecks(clients, full)
	return func(c, i int) (time.Duration, error) {
		rows, in, want := w.request(i)
		req, err := http.NewRequest(http.MethodPost, url+"/infer?rows="+strconv.Itoa(rows), bytes.NewReader(in))
		if err != nil {
			return 0, err
		}
		req.Header.Set("X-Client", strconv.Itoa(c))
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		buf := &bufs[c]
		buf.Reset()
		if _, err := buf.ReadFrom(resp.Body); err != nil {
			return 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("HTTP %s: %s", resp.Status, bytes.TrimSpace(buf.Bytes()))
		}
		waited, err := serverWait(resp.Header)
		if err != nil {
			return 0, err
		}
		if buf.Len() != len(want) {
			return waited, mismatch(buf.Bytes(), want)
		}
		return waited, k.of(c, i, in, want).read(buf.Bytes())
	}
}
