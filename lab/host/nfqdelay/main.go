// nfqdelay: a packet-level delay and loss emulator for kernels without netem.
//
// The lab (lab/host/netpath.py) sends one direction of a veth link's packets to
// an NFQUEUE (iptables-legacy ... -j NFQUEUE --queue-num N) and starts this
// program in the same network namespace. Every packet queued, TCP's SYN,
// SYN-ACK and ACKs included, is held until its arrival time plus the delay,
// then accepted; with the loss probability it is dropped instead. The delay is
// constant, so deadlines are in arrival order: packets leave in the order they
// came, and one batch verdict releases every packet that is due.
//
// Timing: one thread waits in epoll for either a packet or a timerfd armed to
// the first held packet's deadline (absolute CLOCK_MONOTONIC, a high-resolution
// timer), not a polling loop. A packet's delay counts from the kernel's arrival
// stamp, so the hand-over to this program is part of it, not added to it.
//
//	nfqdelay -queue 4711 -delay 0.5ms -loss 0.01 -maxlen 65536 -stats FILE
//
// Counters (JSON) are written to -stats every 100 ms and on exit (SIGTERM,
// SIGINT): packets received, accepted, dropped for loss, and the kernel's own
// drops for this queue (queue full, failed delivery to this program).
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// linux/netfilter/nfnetlink_queue.h
const (
	nfnlSubsysQueue     = 3
	nfqnlMsgPacket      = 0
	nfqnlMsgVerdict     = 1
	nfqnlMsgConfig      = 2
	nfqnlMsgVerdictBat  = 3
	nfqaPacketHdr       = 1
	nfqaVerdictHdr      = 2
	nfqaTimestamp       = 4
	nfqaCfgCmd          = 1
	nfqaCfgParams       = 2
	nfqaCfgQueueMaxlen  = 3
	nfqnlCfgCmdBind     = 1
	nfqnlCfgCmdUnbind   = 2
	nfqnlCopyMeta       = 1
	nfDrop              = 0
	nfAccept            = 1
	netlinkNoEnobufs    = 5
	nlmsgHdrLen         = 16
	nfgenHdrLen         = 4
	receiveBufferTarget = 64 << 20
)

type counters struct {
	Received     atomic.Uint64
	Accepted     atomic.Uint64
	DroppedLoss  atomic.Uint64
	MaxHeld      atomic.Uint64
	LateMicrosMx atomic.Uint64 // the largest release past a deadline, microseconds
	LateSum      atomic.Int64  // microseconds (negative: early), over Releases
	WakeEarly    atomic.Int64  // nanoseconds the timer is set ahead of a deadline: its measured wake-up latency
	Releases     atomic.Uint64
	Stamped      atomic.Uint64 // packets with the kernel's arrival stamp
}

type held struct {
	id       uint32
	deadline int64 // CLOCK_MONOTONIC nanoseconds
}

// fifo holds the packets not yet due, in arrival order (so in deadline order:
// the delay is the same for all).
type fifo struct {
	items []held
	head  int
}

func (q *fifo) push(h held) int {
	q.items = append(q.items, h)
	return len(q.items) - q.head
}

func (q *fifo) empty() bool { return q.head == len(q.items) }

func (q *fifo) next() int64 { return q.items[q.head].deadline }

// popDue removes every packet due by now (or by now+early): the last one's
// id, and how late the first is (negative: early).
func (q *fifo) popDue(now, early int64) (last uint32, late int64, found bool) {
	for q.head < len(q.items) && q.items[q.head].deadline <= now+early {
		if !found {
			late = now - q.items[q.head].deadline
		}
		last, found = q.items[q.head].id, true
		q.head++
	}
	if q.head == len(q.items) { // reuse the storage
		q.items, q.head = q.items[:0], 0
	} else if q.head > 4096 && q.head*2 > len(q.items) {
		q.items, q.head = append(q.items[:0], q.items[q.head:]...), 0
	}
	return last, late, found
}

func monotonic() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

type conn struct {
	fd    int
	queue uint16
	seq   atomic.Uint32
}

func attr(kind uint16, payload []byte) []byte {
	n := 4 + len(payload)
	b := make([]byte, (n+3)&^3)
	binary.NativeEndian.PutUint16(b[0:], uint16(n))
	binary.NativeEndian.PutUint16(b[2:], kind)
	copy(b[4:], payload)
	return b
}

func (c *conn) message(msgType uint16, flags uint16, attrs ...[]byte) []byte {
	body := []byte{unix.AF_UNSPEC, 0, 0, 0} // nfgenmsg: family, version 0, res_id (the queue, big-endian)
	binary.BigEndian.PutUint16(body[2:], c.queue)
	for _, a := range attrs {
		body = append(body, a...)
	}
	m := make([]byte, nlmsgHdrLen, nlmsgHdrLen+len(body))
	binary.NativeEndian.PutUint32(m[0:], uint32(nlmsgHdrLen+len(body)))
	binary.NativeEndian.PutUint16(m[4:], nfnlSubsysQueue<<8|msgType)
	binary.NativeEndian.PutUint16(m[6:], unix.NLM_F_REQUEST|flags)
	binary.NativeEndian.PutUint32(m[8:], c.seq.Add(1))
	return append(m, body...)
}

func (c *conn) send(m []byte) error {
	return unix.Sendto(c.fd, m, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

// configure sends one config message and waits for its acknowledgement.
func (c *conn) configure(a []byte) error {
	if err := c.send(c.message(nfqnlMsgConfig, unix.NLM_F_ACK, a)); err != nil {
		return err
	}
	buf := make([]byte, 8192)
	for {
		n, _, err := unix.Recvfrom(c.fd, buf, 0)
		if err != nil {
			return err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if m.Header.Type == unix.NLMSG_ERROR && len(m.Data) >= 4 {
				if code := int32(binary.NativeEndian.Uint32(m.Data)); code != 0 {
					return unix.Errno(-code)
				}
				return nil
			}
		}
	}
}

func (c *conn) verdict(id uint32, verdict uint32, batch bool) error {
	hdr := make([]byte, 8)
	binary.BigEndian.PutUint32(hdr[0:], verdict)
	binary.BigEndian.PutUint32(hdr[4:], id)
	kind := uint16(nfqnlMsgVerdict)
	if batch {
		kind = nfqnlMsgVerdictBat
	}
	return c.send(c.message(kind, 0, attr(nfqaVerdictHdr, hdr)))
}

func open(queueNum uint16, maxlen uint32) (*conn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("netlink bind: %w", err)
	}
	// A burst of packets must not overflow the socket: the kernel would drop them.
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, receiveBufferTarget); err != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, receiveBufferTarget)
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, netlinkNoEnobufs, 1)
	c := &conn{fd: fd, queue: queueNum}
	bind := []byte{nfqnlCfgCmdBind, 0, 0, 0}
	binary.BigEndian.PutUint16(bind[2:], unix.AF_INET)
	if err := c.configure(attr(nfqaCfgCmd, bind)); err != nil {
		return nil, fmt.Errorf("bind queue %d: %w", queueNum, err)
	}
	params := []byte{0, 0, 0, 0, nfqnlCopyMeta} // copy range 0, metadata only: the payload stays in the kernel
	if err := c.configure(attr(nfqaCfgParams, params)); err != nil {
		return nil, fmt.Errorf("copy mode: %w", err)
	}
	ml := make([]byte, 4)
	binary.BigEndian.PutUint32(ml, maxlen)
	if err := c.configure(attr(nfqaCfgQueueMaxlen, ml)); err != nil {
		return nil, fmt.Errorf("queue maxlen %d: %w", maxlen, err)
	}
	return c, nil
}

// packetInfo reads a packet message's attributes: NFQA_PACKET_HDR's packet
// id and, when the kernel stamped the packet on arrival, NFQA_TIMESTAMP
// (CLOCK_REALTIME, in nanoseconds; 0 without one).
func packetInfo(data []byte) (id uint32, stamp int64, ok bool) {
	for off := nfgenHdrLen; off+4 <= len(data); {
		n := int(binary.NativeEndian.Uint16(data[off:]))
		kind := binary.NativeEndian.Uint16(data[off+2:]) & 0x3fff
		if n < 4 || off+n > len(data) {
			break
		}
		switch {
		case kind == nfqaPacketHdr && n >= 8:
			id, ok = binary.BigEndian.Uint32(data[off+4:]), true
		case kind == nfqaTimestamp && n >= 20:
			sec, usec := binary.BigEndian.Uint64(data[off+4:]), binary.BigEndian.Uint64(data[off+12:])
			stamp = int64(sec)*1e9 + int64(usec)*1e3
		}
		off += (n + 3) &^ 3
	}
	return id, stamp, ok
}

// arrival is when the packet reached the queue's hook (CLOCK_MONOTONIC): the
// kernel's stamp when there is a plausible one, so the time the kernel took to
// hand the packet to this program counts as part of the delay, not on top.
func arrival(stamp, realNow, monoNow int64) int64 {
	if age := realNow - stamp; stamp > 0 && age >= 0 && age < int64(time.Second) {
		return monoNow - age
	}
	return monoNow
}

// stampPackets has the kernel stamp each packet on arrival (a socket asking
// for receive timestamps turns that on; the packets' NFQA_TIMESTAMP follows).
func stampPackets() {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) // kept open until exit
	}
}

// kernelDrops reads this queue's queue_dropped and user_dropped columns.
func kernelDrops(queueNum uint16) (uint64, uint64) {
	f, err := os.Open("/proc/net/netfilter/nfnetlink_queue")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 7 && fields[0] == strconv.Itoa(int(queueNum)) {
			q, _ := strconv.ParseUint(fields[5], 10, 64)
			u, _ := strconv.ParseUint(fields[6], 10, 64)
			return q, u
		}
	}
	return 0, 0
}

func writeStats(path string, queueNum uint16, delay time.Duration, loss float64, c *counters) {
	if path == "" {
		return
	}
	qd, ud := kernelDrops(queueNum)
	out, _ := json.Marshal(map[string]any{
		"queue": queueNum, "delay_ms": float64(delay) / 1e6, "loss": loss,
		"received": c.Received.Load(), "accepted": c.Accepted.Load(), "dropped_loss": c.DroppedLoss.Load(),
		"kernel_queue_dropped": qd, "kernel_user_dropped": ud, "max_held": c.MaxHeld.Load(),
		"max_late_us": c.LateMicrosMx.Load(), "late_us_sum": c.LateSum.Load(), "wake_early_us": c.WakeEarly.Load() / 1000, "releases": c.Releases.Load(),
		"stamped": c.Stamped.Load(),
	})
	tmp := path + ".tmp"
	if os.WriteFile(tmp, out, 0o644) == nil {
		_ = os.Rename(tmp, path)
	}
}

func main() {
	queueNum := flag.Uint("queue", 0, "the NFQUEUE number the iptables rule sends packets to")
	delay := flag.Duration("delay", 0, "one-way delay added to every packet (e.g. 0.5ms, 10ms)")
	loss := flag.Float64("loss", 0, "probability that a packet is dropped (0.01 = 1 %)")
	maxlen := flag.Uint("maxlen", 65536, "the kernel queue's length in packets")
	realtime := flag.Int("realtime", 0, "SCHED_FIFO priority of the packet thread (0: the default scheduler)")
	stats := flag.String("stats", "", "file the counters are written to (JSON)")
	flag.Parse()
	if *queueNum > 65535 || *loss < 0 || *loss >= 1 || *delay < 0 {
		fmt.Fprintln(os.Stderr, "nfqdelay: bad arguments")
		os.Exit(2)
	}
	c, err := open(uint16(*queueNum), uint32(*maxlen))
	if err != nil {
		fmt.Fprintln(os.Stderr, "nfqdelay:", err)
		os.Exit(1)
	}
	stampPackets()
	var count counters
	go run(c, *delay, *loss, *realtime, &count)

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	ticker := time.NewTicker(100 * time.Millisecond)
	fmt.Printf("nfqdelay: queue %d, delay %s, loss %g, maxlen %d\n", *queueNum, *delay, *loss, *maxlen)
	for {
		select {
		case <-ticker.C:
			writeStats(*stats, uint16(*queueNum), *delay, *loss, &count)
		case <-signals:
			writeStats(*stats, uint16(*queueNum), *delay, *loss, &count)
			unbind := []byte{nfqnlCfgCmdUnbind, 0, 0, 0}
			_ = c.send(c.message(nfqnlMsgConfig, 0, attr(nfqaCfgCmd, unbind)))
			os.Exit(0)
		}
	}
}

// run is the emulator's one thread: epoll waits for packets (the netlink
// socket) or for the first held packet's deadline (a timerfd armed to an
// absolute CLOCK_MONOTONIC time), whichever comes first.
func run(c *conn, delay time.Duration, loss float64, realtime int, count *counters) {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	if realtime > 0 { // this thread alone; it sleeps between packets, so it cannot starve the others
		if err := unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO,
			Priority: uint32(realtime)}, 0); err != nil {
			fmt.Fprintln(os.Stderr, "nfqdelay: no real-time priority, runs as any process:", err)
		}
	}
	fail := func(what string, err error) {
		fmt.Fprintln(os.Stderr, "nfqdelay:", what+":", err)
		os.Exit(1)
	}
	timer, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		fail("timerfd", err)
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		fail("epoll", err)
	}
	if err := unix.SetNonblock(c.fd, true); err != nil {
		fail("nonblocking", err)
	}
	for _, fd := range []int{c.fd, timer} {
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			fail("epoll_ctl", err)
		}
	}
	var q fifo
	var armed, early int64 = -1, 0
	const maxEarly = int64(200 * time.Microsecond)
	buf := make([]byte, 1<<20)
	events := make([]unix.EpollEvent, 2)
	scratch := make([]byte, 8)
	for {
		if _, err := unix.EpollWait(ep, events, -1); err != nil && err != unix.EINTR {
			fail("epoll_wait", err)
		}
		if fired, _ := unix.Read(timer, scratch); fired == 8 && armed > 0 {
			// How long the timer took to wake this thread: the next timer is set
			// that much ahead, so that packets leave on their deadline on average.
			wake := min(max(monotonic()-(armed-early), 0), maxEarly)
			early += (wake - early) / 8
			count.WakeEarly.Store(early)
		}
		for {
			n, _, err := unix.Recvfrom(c.fd, buf, 0)
			if err == unix.EAGAIN || err == unix.EINTR {
				break
			}
			if err == unix.ENOBUFS { // the socket overflowed: the kernel dropped packets (counted there)
				continue
			}
			if err != nil {
				fail("receive", err)
			}
			monoNow, realNow := monotonic(), time.Now().UnixNano()
			for off := 0; off+nlmsgHdrLen <= n; {
				length := int(binary.NativeEndian.Uint32(buf[off:]))
				kind := binary.NativeEndian.Uint16(buf[off+4:])
				if length < nlmsgHdrLen || off+length > n {
					break
				}
				if kind == nfnlSubsysQueue<<8|nfqnlMsgPacket {
					if id, stamp, ok := packetInfo(buf[off+nlmsgHdrLen : off+length]); ok {
						count.Received.Add(1)
						if stamp > 0 {
							count.Stamped.Add(1)
						}
						if loss > 0 && rand.Float64() < loss {
							count.DroppedLoss.Add(1)
							_ = c.verdict(id, nfDrop, false)
						} else {
							count.Accepted.Add(1)
							if h := uint64(q.push(held{id, arrival(stamp, realNow, monoNow) + int64(delay)})); h > count.MaxHeld.Load() {
								count.MaxHeld.Store(h)
							}
						}
					}
				}
				off += (length + 3) &^ 3
			}
		}
		if id, late, ok := q.popDue(monotonic(), early); ok {
			count.LateSum.Add(late / 1000)
			count.Releases.Add(1)
			if late > 0 && uint64(late/1000) > count.LateMicrosMx.Load() {
				count.LateMicrosMx.Store(uint64(late / 1000))
			}
			if err := c.verdict(id, nfAccept, true); err != nil {
				fmt.Fprintln(os.Stderr, "nfqdelay: verdict:", err)
			}
		}
		if !q.empty() && q.next() != armed {
			armed = q.next()
			spec := unix.ItimerSpec{Value: unix.NsecToTimespec(armed - early)}
			if err := unix.TimerfdSettime(timer, unix.TFD_TIMER_ABSTIME, &spec, nil); err != nil {
				fail("timerfd_settime", err)
			}
		}
	}
}
