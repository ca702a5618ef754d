package logstore

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// crashDirEnv, set, makes the test binary the crash test's child: it
// appends to crashPrefixes logs in crashDir until it is killed.
const crashDirEnv = "LOGSTORE_CRASH_CHILD_DIR"

var crashPrefixes = []uint64{1, 2, 3}

// Every crashDeleteEvery batches, the child deletes the next crashDeleteStep
// entries at the head of its log, as raft does after a snapshot.
const (
	crashDeleteEvery = 25
	crashDeleteStep  = 10
)

// TestCrashKeepsAcknowledged: a child process appends synced batches to
// three logs at once (their commits share WAL syncs) and prints each
// acknowledged index; the parent kills it with SIGKILL mid-write, reopens
// the store and finds every acknowledged entry, and no hole.
func TestCrashKeepsAcknowledged(t *testing.T) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		crashChild(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashKeepsAcknowledged$")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := map[uint64]uint64{}   // prefix → highest acknowledged index
	deleted := map[uint64]uint64{} // prefix → highest acknowledged deletion
	killAfter := 150 + rand.IntN(300)
	sc := bufio.NewScanner(out)
	for n := 0; sc.Scan(); n++ {
		var op string
		var p, idx uint64
		if _, err := fmt.Sscanf(sc.Text(), "%s %d %d", &op, &p, &idx); err != nil {
			continue // the test framework's own lines
		}
		if op == "ack" {
			acked[p] = max(acked[p], idx)
		} else if op == "del" {
			deleted[p] = max(deleted[p], idx)
		}
		if n == killAfter {
			// By pid, the one this test started; acknowledgements
			// already in the pipe are still read below.
			if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("child exited by itself")
	}
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged before the kill")
	}
	checkAfterCrash(t, dir, acked, deleted)
}

// checkAfterCrash: each log runs from just after a head deletion (the last
// acknowledged one, or the one in flight) to at least its last
// acknowledged index, with every entry in between intact.
func checkAfterCrash(t *testing.T, dir string, acked, deleted map[uint64]uint64) {
	db := openDB(t, dir)
	defer db.Close()
	for _, p := range crashPrefixes {
		l := openLog(t, db, p)
		first, _ := l.FirstIndex()
		last, _ := l.LastIndex()
		t.Logf("log %d: %d..%d, acknowledged up to %d, deleted up to %d", p, first, last, acked[p], deleted[p])
		if last < acked[p] {
			t.Errorf("log %d: last index %d, but %d was acknowledged", p, last, acked[p])
		}
		if first != deleted[p]+1 && first != deleted[p]+crashDeleteStep+1 {
			t.Errorf("log %d: first index %d, want %d or %d", p, first, deleted[p]+1, deleted[p]+crashDeleteStep+1)
		}
		for i := first; i <= last && first != 0; i++ {
			var got raft.Log
			if err := l.GetLog(i, &got); err != nil {
				t.Fatalf("log %d: index %d of %d..%d: %v", p, i, first, last, err)
			}
			if want := crashEntry(p, i); !sameLog(&got, want) {
				t.Fatalf("log %d: index %d = %+v, want %+v", p, i, got, want)
			}
		}
	}
}

func crashEntry(p, i uint64) *raft.Log {
	return &raft.Log{Index: i, Term: p, Type: raft.LogCommand, Data: fmt.Appendf(nil, "log %d entry %d", p, i)}
}

// crashChild appends batches of 1 to 4 entries to each log from its own
// goroutine, printing "ack <prefix> <last index>" once a batch is stored
// and "del <prefix> <index>" once a head deletion is; it runs until it is
// killed, or for a minute if the parent died.
func crashChild(dir string) {
	db, err := Open(dir, quiet())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	say := func(op string, p, i uint64) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, "%s %d %d\n", op, p, i)
	}
	for _, p := range crashPrefixes {
		l, err := db.Log(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		go crashWriter(l, p, say)
	}
	time.Sleep(time.Minute)
	os.Exit(3)
}

func crashWriter(l *GroupLog, p uint64, say func(string, uint64, uint64)) {
	next, head := uint64(1), uint64(0)
	for n := 0; ; n++ {
		var batch []*raft.Log
		for range 1 + n%4 {
			batch = append(batch, crashEntry(p, next))
			next++
		}
		err := l.StoreLogs(batch)
		if err == nil {
			say("ack", p, next-1)
		}
		if err == nil && n%crashDeleteEvery == crashDeleteEvery-1 {
			err = l.DeleteRange(head+1, head+crashDeleteStep)
			head += crashDeleteStep
			if err == nil {
				say("del", p, head)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, errors.Join(errors.New("crash child"), err))
			os.Exit(2)
		}
	}
}
