package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/cudapool/cudapool/nccl"
)

// The rendezvous: rank 0 listens on MASTER_ADDR:MASTER_PORT, and only
// there; every other rank dials it and says who it is; rank 0 answers each
// rank of its job with the NCCL unique ids of the run's communicators, and
// anything else with an error, then stops listening once all have joined.
//
// On the wire, a rank's hello is helloBytes long:
//
//	magic "cudapool-tp/1\n" | job uint64 | world uint32 | rank uint32
//
// and rank 0's answer is a status byte, a uint32 length and that many
// bytes: for statusOK the ids, 128 bytes each; for statusRefused a message
// saying why. Integers are big-endian. A peer that sends anything else, or
// nothing, within handshakeTimeout is closed on; rank 0 goes on waiting for
// its ranks.

// magic opens every hello: what a port scan or a stray client does not
// send.
const magic = "cudapool-tp/1\n"

const helloBytes = len(magic) + 8 + 4 + 4

const (
	statusOK      byte = 'K'
	statusRefused byte = 'R'
)

// maxAnswer bounds an answer's length: 64 ids, or a message.
const maxAnswer = 64 * len(nccl.UniqueID{})

// handshakeTimeout is how long one connection may take to say hello, or to
// answer it: a connection that sends nothing is dropped after it, without
// holding the other ranks up (each connection is served apart).
const handshakeTimeout = 5 * time.Second

// DefaultRendezvousTimeout bounds the whole rendezvous: rank 0 waits this
// long for every rank to join, and a rank this long for rank 0 to answer
// (dialling again while rank 0 is not listening yet).
const DefaultRendezvousTimeout = 60 * time.Second

// ErrRendezvous is a rendezvous that failed: a rank missing at the
// deadline, or a peer that is not a rank of this job.
var ErrRendezvous = errors.New("rendezvous failed")

// hello is what a rank says to rank 0: its job (a hash of what the run
// computes, which every rank of a job shares), the world size it was
// launched with, and its rank.
type hello struct {
	job         uint64
	world, rank uint32
}

func (h hello) marshal() []byte {
	b := make([]byte, 0, helloBytes)
	b = append(b, magic...)
	b = binary.BigEndian.AppendUint64(b, h.job)
	b = binary.BigEndian.AppendUint32(b, h.world)
	return binary.BigEndian.AppendUint32(b, h.rank)
}

// readHello reads a hello from r, refusing anything that does not open with
// magic.
func readHello(r io.Reader) (hello, error) {
	var b [helloBytes]byte
	n := 0
	for n < helloBytes {
		k, err := r.Read(b[n:])
		n += k
		// Refused at the first byte that is not the magic's, without
		// waiting for the rest: garbage shorter than a hello is
		// answered at once.
		if m := min(n, len(magic)); string(b[:m]) != magic[:m] {
			return hello{}, fmt.Errorf("not a tp rank: its first bytes are %q", b[:m])
		}
		if err != nil && n < helloBytes {
			if err == io.EOF && n > 0 {
				err = io.ErrUnexpectedEOF
			}
			return hello{}, fmt.Errorf("an incomplete hello (%d of %d B): %w", n, helloBytes, err)
		}
	}
	p := b[len(magic):]
	return hello{job: binary.BigEndian.Uint64(p), world: binary.BigEndian.Uint32(p[8:]), rank: binary.BigEndian.Uint32(p[12:])}, nil
}

// writeAnswer sends status and body.
func writeAnswer(w io.Writer, status byte, body []byte) error {
	b := append([]byte{status}, binary.BigEndian.AppendUint32(nil, uint32(len(body)))...)
	_, err := w.Write(append(b, body...))
	return err
}

// readAnswer reads rank 0's answer: the ids, n of them, or the error rank 0
// sent.
func readAnswer(r io.Reader, n int) ([]nccl.UniqueID, error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, fmt.Errorf("no answer from rank 0: %w", err)
	}
	size := binary.BigEndian.Uint32(head[1:])
	if int(size) > maxAnswer {
		return nil, fmt.Errorf("rank 0's answer is %d B long, more than the %d B an answer may be: not a tp rank 0", size, maxAnswer)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("rank 0's answer cut short: %w", err)
	}
	switch head[0] {
	case statusRefused:
		return nil, fmt.Errorf("%w: rank 0 refused this rank: %s", ErrRendezvous, strconv.Quote(string(body)))
	case statusOK:
	default:
		return nil, fmt.Errorf("rank 0's answer opens with %q: not a tp rank 0", head[0])
	}
	idBytes := len(nccl.UniqueID{})
	if len(body) != n*idBytes {
		return nil, fmt.Errorf("rank 0 sent %d B of ids, want %d ids of %d B", len(body), n, idBytes)
	}
	ids := make([]nccl.UniqueID, n)
	for i := range ids {
		copy(ids[i][:], body[i*idBytes:])
	}
	return ids, nil
}

// master is rank 0's side of a rendezvous.
type master struct {
	ln      net.Listener
	job     uint64
	world   int
	ids     []nccl.UniqueID
	log     func(format string, args ...any)
	timeout time.Duration

	mu     sync.Mutex // guards joined
	joined map[uint32]bool
	done   chan struct{} // closed once every rank has joined
}

// listen listens on addr, which must name the host's address (MASTER_ADDR)
// and port (MASTER_PORT): an empty host, which would listen on every
// interface, is refused.
func listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("MASTER_ADDR:MASTER_PORT %q: %w", addr, err)
	}
	if host == "" {
		return nil, fmt.Errorf("MASTER_ADDR is empty: rank 0 listens only on the address it is given")
	}
	return net.Listen("tcp", addr)
}

// serveRanks answers every rank 1 to world-1 of job on ln with ids, and
// returns once all have joined, or with an error naming those missing at
// the deadline. A connection that is not such a rank is refused, logged,
// and does not count. It closes ln.
func serveRanks(ln net.Listener, job uint64, world int, ids []nccl.UniqueID, timeout time.Duration, log func(string, ...any)) error {
	m := &master{ln: ln, job: job, world: world, ids: ids, log: log, timeout: timeout, joined: map[uint32]bool{}, done: make(chan struct{})}
	defer ln.Close()
	if world == 1 {
		return nil
	}
	deadline := time.Now().Add(timeout)
	go m.accept(deadline)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-m.done:
		return nil
	case <-timer.C:
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var missing []int
	for r := 1; r < world; r++ {
		if !m.joined[uint32(r)] {
			missing = append(missing, r)
		}
	}
	return fmt.Errorf("%w: rank 0 on %s waited %v for ranks 1 to %d: %v never joined", ErrRendezvous, ln.Addr(), timeout, world-1, missing)
}

func (m *master) accept(deadline time.Time) {
	for {
		conn, err := m.ln.Accept()
		if err != nil {
			return // closed: done, or timed out
		}
		go m.handle(conn, deadline)
	}
}

// handle serves one connection, within handshakeTimeout and the
// rendezvous' deadline.
func (m *master) handle(conn net.Conn, deadline time.Time) {
	defer conn.Close()
	if err := conn.SetDeadline(earlier(deadline, time.Now().Add(handshakeTimeout))); err != nil {
		return
	}
	if who, err := m.answer(conn); err != nil {
		m.log("%s at %s: %v", who, conn.RemoteAddr(), err)
	}
}

// answer reads a hello from rw and answers it: the ids to a rank of the
// job not yet joined, else a refusal saying why (but to a peer that sent
// nothing). who names the peer for the log.
func (m *master) answer(rw io.ReadWriter) (who string, err error) {
	h, err := readHello(rw)
	if err != nil {
		if !errors.Is(err, io.EOF) {
			_ = writeAnswer(rw, statusRefused, []byte(err.Error()))
		}
		return "refused", err
	}
	who = fmt.Sprintf("rank %d", h.rank)
	if err := m.admit(h); err != nil {
		_ = writeAnswer(rw, statusRefused, []byte(err.Error()))
		return "refused " + who, err
	}
	body := make([]byte, 0, len(m.ids)*len(nccl.UniqueID{}))
	for _, id := range m.ids {
		body = append(body, id[:]...)
	}
	if err := writeAnswer(rw, statusOK, body); err != nil {
		m.mu.Lock()
		delete(m.joined, h.rank)
		m.mu.Unlock()
		return who, err
	}
	return who, nil
}

// admit counts h in, if it is a rank of the job not yet joined.
func (m *master) admit(h hello) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case h.job != m.job:
		return fmt.Errorf("job %016x is not this one (%016x): a rank launched with other flags or another program", h.job, m.job)
	case int(h.world) != m.world:
		return fmt.Errorf("WORLD_SIZE %d, rank 0's is %d", h.world, m.world)
	case h.rank == 0 || int(h.rank) >= m.world:
		return fmt.Errorf("RANK %d: want 1 to %d", h.rank, m.world-1)
	case m.joined[h.rank]:
		return fmt.Errorf("RANK %d has joined already", h.rank)
	}
	m.joined[h.rank] = true
	if len(m.joined) == m.world-1 {
		close(m.done)
	}
	return nil
}

// joinRank dials rank 0 at addr as rank h.rank and returns the n ids it
// answers with. It dials again while rank 0 is not listening yet, until
// timeout; every error after the connection is made is final.
func joinRank(addr string, h hello, n int, timeout time.Duration) ([]nccl.UniqueID, error) {
	deadline := time.Now().Add(timeout)
	var conn net.Conn
	var err error
	for {
		d := net.Dialer{Deadline: earlier(deadline, time.Now().Add(handshakeTimeout))}
		if conn, err = d.Dial("tcp", addr); err == nil {
			break
		}
		if time.Now().Add(100 * time.Millisecond).After(deadline) {
			return nil, fmt.Errorf("%w: rank %d could not reach rank 0 at %s within %v: %w", ErrRendezvous, h.rank, addr, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	defer conn.Close()
	if err := conn.SetDeadline(earlier(deadline, time.Now().Add(2*handshakeTimeout))); err != nil {
		return nil, err
	}
	if _, err := conn.Write(h.marshal()); err != nil {
		return nil, fmt.Errorf("%w: rank %d to rank 0 at %s: %w", ErrRendezvous, h.rank, addr, err)
	}
	ids, err := readAnswer(conn, n)
	if err != nil {
		return nil, fmt.Errorf("%w: rank %d, from %s: %w", ErrRendezvous, h.rank, addr, err)
	}
	return ids, nil
}

// jobOf hashes what every rank of one job must agree on (FNV-1a).
func jobOf(parts ...any) uint64 {
	h := uint64(14695981039346656037)
	for _, b := range []byte(fmt.Sprint(parts...)) {
		h ^= uint64(b)
		h *= 1099511628211
	}
	return h
}

// earlier is the earlier of a and b.
func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
