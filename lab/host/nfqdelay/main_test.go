package main

import (
	"encoding/binary"
	"testing"
	"time"
)

func TestFifoReleasesInOrderWhatIsDue(t *testing.T) {
	var q fifo
	for i, deadline := range []int64{100, 200, 300, 400} {
		q.push(held{uint32(i + 1), deadline})
	}
	if _, _, ok := q.popDue(50, 0); ok {
		t.Fatal("released before any deadline")
	}
	last, late, ok := q.popDue(250, 0)
	if !ok || last != 2 || late != 150 {
		t.Fatalf("popDue(250) = %d, %d, %v; want the second packet, 150 ns late", last, late, ok)
	}
	last, late, ok = q.popDue(290, 20) // released early by the timer's wake-up margin
	if !ok || last != 3 || late != -10 {
		t.Fatalf("popDue(290, 20) = %d, %d, %v; want the third packet, 10 ns early", last, late, ok)
	}
	if q.empty() || q.next() != 400 {
		t.Fatal("the fourth packet should still be held")
	}
	q.popDue(1000, 0)
	if !q.empty() {
		t.Fatal("not empty after every deadline passed")
	}
}

func TestArrivalUsesAPlausibleKernelStamp(t *testing.T) {
	real, mono := int64(10*time.Second), int64(5*time.Second)
	if got := arrival(real-int64(300*time.Microsecond), real, mono); got != mono-int64(300*time.Microsecond) {
		t.Fatalf("a stamp 300 µs old: arrival %d", got)
	}
	for _, stamp := range []int64{0, real + 1, real - int64(2*time.Second)} { // none, future, implausibly old
		if got := arrival(stamp, real, mono); got != mono {
			t.Fatalf("stamp %d: arrival %d, want now", stamp, got)
		}
	}
}

func TestPacketInfoReadsIDAndStamp(t *testing.T) {
	hdr := make([]byte, 7) // packet id, hw protocol, hook
	binary.BigEndian.PutUint32(hdr, 4711)
	stamp := make([]byte, 16)
	binary.BigEndian.PutUint64(stamp, 12)
	binary.BigEndian.PutUint64(stamp[8:], 345)
	data := append([]byte{2, 0, 0, 0}, attr(nfqaPacketHdr, hdr)...)
	data = append(data, attr(nfqaTimestamp, stamp)...)
	id, ts, ok := packetInfo(data)
	if !ok || id != 4711 || ts != 12*1e9+345*1e3 {
		t.Fatalf("packetInfo = %d, %d, %v", id, ts, ok)
	}
	if _, _, ok := packetInfo([]byte{2, 0, 0, 0}); ok {
		t.Fatal("a message without a packet header has no id")
	}
}
