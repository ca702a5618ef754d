package difftest

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// Busy scripts: a script that runs past busy-reply-threshold, seen from a
// second connection, on redis-server and on slotraft. Redis 7.0 and 7.2
// word NOTBUSY, BUSY, UNKILLABLE and the killed-script error alike.
//
// The second connection first polls the kill command of the other kind
// (FUNCTION KILL for a script): it answers NOTBUSY until the script is
// past the threshold, and neither server lets it kill the script. On
// slotraft a command for the script's group that arrived before the
// threshold would wait for the script instead (docs/compatibility.md).

const busySpin = "local i=0 while true do i=i+1 end"

// durationRe finds FUNCTION STATS's duration_ms, which no two runs share.
var durationRe = regexp.MustCompile(`("duration_ms" :)\d+`)

// busyScenario is a script run and what is done while it is busy.
type busyScenario struct {
	name   string
	setup  [][]string // before the script, on the second connection
	script []string
	poll   string     // SCRIPT or FUNCTION: the kill that polls
	acts   [][]string // once busy
	// txBefore runs on a third connection before the script, txDuring
	// there once busy (before acts)
	txBefore, txDuring [][]string
	reply              bool // the script's own reply ends the transcript
}

func TestBusyScriptsDifferential(t *testing.T) {
	fnLoop := "#!lua name=busy\nredis.register_function{function_name='spin', callback=function() " + busySpin +
		" end, flags={'no-writes'}}"
	for _, sc := range []busyScenario{
		{name: "read-only script killed", script: []string{"EVAL_RO", busySpin, "1", "k"}, poll: "FUNCTION",
			acts: [][]string{{"GET", "k"}, {"SET", "k", "v"}, {"FUNCTION", "KILL"}, {"FUNCTION", "STATS"}, {"SCRIPT", "KILL"}}, reply: true},
		// slotraft runs a no-writes EVAL as a read once its group caches it
		{name: "no-writes EVAL killed", setup: [][]string{{"SCRIPT", "LOAD", "#!lua flags=no-writes\n" + busySpin}},
			script: []string{"EVAL", "#!lua flags=no-writes\n" + busySpin, "1", "k"}, poll: "FUNCTION",
			acts: [][]string{{"GET", "k"}, {"SCRIPT", "KILL"}}, reply: true},
		{name: "transaction refused", script: []string{"EVAL_RO", busySpin, "1", "k"}, poll: "FUNCTION",
			txBefore: [][]string{{"MULTI"}, {"SET", "k", "1"}}, txDuring: [][]string{{"GET", "k"}, {"EXEC"}},
			acts: [][]string{{"SCRIPT", "KILL"}}, reply: true},
		{name: "read-only function killed", setup: [][]string{{"FUNCTION", "LOAD", "REPLACE", fnLoop}},
			script: []string{"FCALL_RO", "spin", "1", "k"}, poll: "SCRIPT",
			acts: [][]string{{"GET", "k"}, {"SCRIPT", "KILL"}, {"FUNCTION", "STATS"}, {"FUNCTION", "KILL"}}, reply: true},
		// slotraft ends it with its instruction budget; redis-server
		// with SHUTDOWN NOSAVE when the test ends
		{name: "writing script unkillable", script: []string{"EVAL", "redis.call('set', KEYS[1], '1') " + busySpin, "1", "k"},
			poll: "SCRIPT", acts: [][]string{{"GET", "k"}, {"SCRIPT", "KILL"}, {"FUNCTION", "KILL"}}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			want := busyTranscript(t, startRedis(t), sc)
			got := busyTranscript(t, startSlotraft(t), sc)
			if strings.Join(want, "\n") != strings.Join(got, "\n") {
				t.Errorf("\nredis-server:\n  %s\nslotraft:\n  %s", strings.Join(want, "\n  "), strings.Join(got, "\n  "))
			}
		})
	}
}

// busyTranscript runs sc on the server at addr and returns the replies
// of the second connection (and the script's own) in order.
func busyTranscript(t *testing.T, addr string, sc busyScenario) []string {
	ctl, run := connect(t, addr, "2"), connect(t, addr, "2")
	out := []string{mustDo(t, ctl, "CONFIG", "SET", "busy-reply-threshold", "50").String()}
	for _, args := range sc.setup {
		out = append(out, mustDo(t, ctl, args...).String())
	}
	out = append(out, mustDo(t, ctl, "SCRIPT", "KILL").String(), mustDo(t, ctl, "FUNCTION", "KILL").String())
	tx := connect(t, addr, "2")
	for _, args := range sc.txBefore {
		out = append(out, mustDo(t, tx, args...).String())
	}
	run.send(sc.script...)
	if err := run.w.Flush(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		r := mustDo(t, ctl, sc.poll, "KILL")
		if r.typ != '-' || !strings.HasPrefix(r.str, "NOTBUSY") {
			out = append(out, r.String())
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the script never got busy", addr)
		}
	}
	for _, args := range sc.txDuring {
		out = append(out, mustDo(t, tx, args...).String())
	}
	for _, args := range sc.acts {
		out = append(out, durationRe.ReplaceAllString(mustDo(t, ctl, args...).String(), "${1}N"))
	}
	if sc.reply {
		_ = run.conn.SetDeadline(time.Now().Add(10 * time.Second))
		r, err := run.read()
		if err != nil {
			t.Fatalf("%s: the script's reply: %v", addr, err)
		}
		out = append(out, "script: "+r.String(), mustDo(t, ctl, "GET", "k").String())
	}
	return out
}
