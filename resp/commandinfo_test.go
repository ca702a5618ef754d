package resp

import (
	"reflect"
	"strings"
	"testing"
)

// crlf joins lines with CRLF, each line ending in one.
func crlf(lines ...string) string { return strings.Join(lines, "\r\n") + "\r\n" }

var getCmd = &Command{
	Name: "get", Arity: 2, Flags: FlagReadOnly | FlagFast,
	FirstKey: 1, LastKey: 1, Step: 1,
	ACL: []string{"string"}, Group: "string", Since: "1.0.0",
	Summary: "Returns the string value of a key.", Complexity: "O(1)",
}

func TestInfoGet(t *testing.T) {
	keySpec3 := crlf(
		"~1", "%3",
		"$5", "flags", "~2", "+RO", "+access",
		"$12", "begin_search", "%2", "$4", "type", "$5", "index", "$4", "spec", "%1", "$5", "index", ":1",
		"$9", "find_keys", "%2", "$4", "type", "$5", "range", "$4", "spec", "%3",
		"$7", "lastkey", ":0", "$7", "keystep", ":1", "$5", "limit", ":0",
	)
	want3 := crlf("*10", "$3", "get", ":2", "~2", "+readonly", "+fast", ":1", ":1", ":1",
		"~3", "+@read", "+@string", "+@fast", "~0") + keySpec3 + crlf("~0")
	if got := string(getCmd.Info().Append(nil, RESP3)); got != want3 {
		t.Errorf("RESP3 COMMAND INFO get:\n got %q\nwant %q", got, want3)
	}
	keySpec2 := crlf(
		"*1", "*6",
		"$5", "flags", "*2", "+RO", "+access",
		"$12", "begin_search", "*4", "$4", "type", "$5", "index", "$4", "spec", "*2", "$5", "index", ":1",
		"$9", "find_keys", "*4", "$4", "type", "$5", "range", "$4", "spec", "*6",
		"$7", "lastkey", ":0", "$7", "keystep", ":1", "$5", "limit", ":0",
	)
	want2 := crlf("*10", "$3", "get", ":2", "*2", "+readonly", "+fast", ":1", ":1", ":1",
		"*3", "+@read", "+@string", "+@fast", "*0") + keySpec2 + crlf("*0")
	if got := string(getCmd.Info().Append(nil, RESP2)); got != want2 {
		t.Errorf("RESP2 COMMAND INFO get:\n got %q\nwant %q", got, want2)
	}
}

func TestDocsGet(t *testing.T) {
	want := crlf("%4",
		"$7", "summary", "$34", "Returns the string value of a key.",
		"$5", "since", "$5", "1.0.0",
		"$5", "group", "$6", "string",
		"$10", "complexity", "$4", "O(1)")
	if got := string(getCmd.Docs().Append(nil, RESP3)); got != want {
		t.Errorf("COMMAND DOCS get:\n got %q\nwant %q", got, want)
	}
}

func TestCategories(t *testing.T) {
	tests := []struct {
		cmd  *Command
		want []string
	}{
		{getCmd, []string{"@read", "@string", "@fast"}},
		{&Command{Flags: FlagWrite | FlagDenyOOM, ACL: []string{"string"}}, []string{"@write", "@string", "@slow"}},
		{&Command{Flags: FlagAdmin | FlagNoScript, ACL: []string{"keyspace"}}, []string{"@keyspace", "@admin", "@slow", "@dangerous"}},
		{&Command{Flags: FlagWrite | FlagBlocking, ACL: []string{"list"}}, []string{"@write", "@list", "@slow", "@blocking"}},
		{&Command{Flags: FlagPubSub | FlagFast}, []string{"@pubsub", "@fast"}},
		{&Command{Flags: FlagReadOnly, ACL: []string{"scripting"}}, []string{"@slow", "@scripting"}},
		{&Command{ACL: []string{"connection", "custom"}}, []string{"@slow", "@connection", "@custom"}},
	}
	for _, tt := range tests {
		if got := tt.cmd.Categories(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Categories(%v) = %v, want %v", tt.cmd.ACL, got, tt.want)
		}
	}
}

func TestKeySpecs(t *testing.T) {
	// A command Redis knows has Redis's specs; another, specs derived
	// from its key positions.
	del := &Command{Name: "del", Arity: -2, Flags: FlagWrite, FirstKey: 1, LastKey: -1, Step: 1}
	want := []KeySpec{{Flags: []string{"RM", "delete"}, Index: 1, LastKey: -1, KeyStep: 1}}
	if got := del.KeySpecList(); !reflect.DeepEqual(got, want) {
		t.Errorf("del key specs = %+v", got)
	}
	mydel := &Command{Name: "mydel", Arity: -2, Flags: FlagWrite, FirstKey: 1, LastKey: -1, Step: 1}
	want = []KeySpec{{Flags: []string{"RW", "access", "update"}, Index: 1, LastKey: -1, KeyStep: 1}}
	if got := mydel.KeySpecList(); !reflect.DeepEqual(got, want) {
		t.Errorf("mydel key specs = %+v", got)
	}
	ping := &Command{Name: "ping", Arity: -1, Flags: FlagFast}
	if got := ping.Info().Elems; got[3].Int != 0 || got[4].Int != 0 || got[5].Int != 0 || len(got[8].Elems) != 0 {
		t.Errorf("ping key positions = %v %v %v, specs %v", got[3], got[4], got[5], got[8])
	}
	eval := &Command{
		Name: "eval", Arity: -3, Flags: FlagNoScript,
		Keys: func([][]byte) []int { return nil },
		KeySpecs: []KeySpec{{
			Notes: "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
			Flags: []string{"RW", "access", "update"}, Index: 2, KeyNum: true, FirstKey: 1, KeyStep: 1,
		}},
	}
	wantEval := crlf("*10", "$4", "eval", ":-3", "*2", "+noscript", "+movablekeys", ":0", ":0", ":0",
		"*1", "+@slow", "*0",
		"*1", "*8",
		"$5", "notes", "$78", "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE",
		"$5", "flags", "*3", "+RW", "+access", "+update",
		"$12", "begin_search", "*4", "$4", "type", "$5", "index", "$4", "spec", "*2", "$5", "index", ":2",
		"$9", "find_keys", "*4", "$4", "type", "$6", "keynum", "$4", "spec", "*6",
		"$9", "keynumidx", ":0", "$8", "firstkey", ":1", "$7", "keystep", ":1",
		"*0")
	if got := string(eval.Info().Append(nil, RESP2)); got != wantEval {
		t.Errorf("COMMAND INFO eval:\n got %q\nwant %q", got, wantEval)
	}
	kw := KeySpec{Flags: []string{"RO"}, Keyword: "STREAMS", StartFrom: 1, FindUnknown: true}
	wantKw := crlf("%3", "$5", "flags", "~1", "+RO",
		"$12", "begin_search", "%2", "$4", "type", "$7", "keyword", "$4", "spec", "%2",
		"$7", "keyword", "$7", "STREAMS", "$9", "startfrom", ":1",
		"$9", "find_keys", "%2", "$4", "type", "$7", "unknown", "$4", "spec", "%0")
	if got := string(kw.value().Append(nil, RESP3)); got != wantKw {
		t.Errorf("keyword spec:\n got %q\nwant %q", got, wantKw)
	}
}

func TestInfoSubcommands(t *testing.T) {
	sub := &Command{Name: "config|get", Arity: -3, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale,
		Group: "server", Since: "2.0.0", Summary: "Returns the effective values of configuration parameters.",
		Complexity: "O(N) when N is the number of configuration parameters provided"}
	config := &Command{Name: "config", Arity: -2, Group: "server", Since: "2.0.0",
		Summary: "A container for server configuration commands.", Complexity: "Depends on subcommand.",
		Subcommands: []*Command{sub}}
	info := config.Info()
	subs := info.Elems[9]
	if subs.Kind != KindArray || len(subs.Elems) != 1 || string(subs.Elems[0].Elems[0].Str) != "config|get" {
		t.Fatalf("subcommands = %+v", subs)
	}
	wantFlags := []string{"admin", "noscript", "loading", "stale"}
	var gotFlags []string
	for _, f := range subs.Elems[0].Elems[2].Elems {
		gotFlags = append(gotFlags, string(f.Str))
	}
	if !reflect.DeepEqual(gotFlags, wantFlags) {
		t.Errorf("config|get flags = %v, want %v", gotFlags, wantFlags)
	}
	if cats := sub.Categories(); !reflect.DeepEqual(cats, []string{"@admin", "@slow", "@dangerous"}) {
		t.Errorf("config|get categories = %v", cats)
	}
	docs := string(config.Docs().Append(nil, RESP3))
	wantTail := crlf("$11", "subcommands", "%1", "$10", "config|get", "%4")
	if !strings.HasPrefix(docs, "%5\r\n") || !strings.Contains(docs, wantTail) {
		t.Errorf("COMMAND DOCS config = %q", docs)
	}
}
