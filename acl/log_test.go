package acl

import (
	"testing"
)

func TestLogGrouping(t *testing.T) {
	l := NewLog(3)
	l.Add(ReasonKey, ContextToplevel, "k", "u", "c1", 1000)
	l.Add(ReasonKey, ContextToplevel, "k", "u", "c2", 2000)   // grouped
	l.Add(ReasonKey, ContextMulti, "k", "u", "c3", 3000)      // other context
	l.Add(ReasonKey, ContextToplevel, "k", "u", "c4", 61000)  // 59 s after the last update: grouped
	l.Add(ReasonKey, ContextToplevel, "k", "u", "c5", 140001) // 79 s: a new entry
	got := l.Entries(10)
	want := []LogEntry{
		{Count: 1, Reason: ReasonKey, Context: ContextToplevel, Object: "k", Username: "u", ClientInfo: "c5", EntryID: 2, Created: 140001, Updated: 140001},
		{Count: 3, Reason: ReasonKey, Context: ContextToplevel, Object: "k", Username: "u", ClientInfo: "c4", EntryID: 0, Created: 1000, Updated: 61000},
		{Count: 1, Reason: ReasonKey, Context: ContextMulti, Object: "k", Username: "u", ClientInfo: "c3", EntryID: 1, Created: 3000, Updated: 3000},
	}
	if len(got) != len(want) {
		t.Fatalf("entries %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	l.Add(ReasonAuth, ContextToplevel, "AUTH", "x", "c6", 150000)
	if l.Len() != 3 || l.Entries(3)[2].EntryID != 0 || l.Entries(1)[0].EntryID != 3 {
		t.Errorf("not trimmed to 3: %+v", l.Entries(10))
	}
	if n := len(l.Entries(-1)); n != 0 {
		t.Errorf("Entries(-1) gave %d", n)
	}
	l.MaxLen = 1
	l.Trim()
	l.Reset()
	l.Add(ReasonCommand, ContextLua, "get", "u", "c", 1)
	if e := l.Entries(10); len(e) != 1 || e[0].EntryID != 4 {
		t.Errorf("after reset: %+v", e)
	}
}

func TestLogReply(t *testing.T) {
	l := NewLog(DefaultLogMaxLen)
	l.Add(ReasonChannel, ContextMulti, "ch", "alice", "id=1", 1000)
	v := l.Reply(10, 3500)
	got := string(v.Append(nil, 2))
	want := "*1\r\n*20\r\n$5\r\ncount\r\n:1\r\n$6\r\nreason\r\n$7\r\nchannel\r\n$7\r\ncontext\r\n$5\r\nmulti\r\n" +
		"$6\r\nobject\r\n$2\r\nch\r\n$8\r\nusername\r\n$5\r\nalice\r\n$11\r\nage-seconds\r\n$3\r\n2.5\r\n" +
		"$11\r\nclient-info\r\n$4\r\nid=1\r\n$8\r\nentry-id\r\n:0\r\n$17\r\ntimestamp-created\r\n:1000\r\n" +
		"$22\r\ntimestamp-last-updated\r\n:1000\r\n"
	if got != want {
		t.Errorf("Reply:\n got %q\nwant %q", got, want)
	}
}
