package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/slotraft/slotraft/resp"
)

// A config file in Redis's syntax (redis.conf), read once when a node
// starts (`slotraft server --config FILE`): one directive per line, '#'
// comments, arguments split as sdssplitargs, `include` of other files.
// Every parameter of the CONFIG registry may appear and is parsed by the
// parser CONFIG SET uses; the directives the caller owns (slotraft's own
// settings) are handed to it. CONFIG REWRITE writes the file back
// (config_rewrite.go).

// OwnDirective applies one of the caller's own directives; args are the
// line's arguments after the directive's name.
type OwnDirective func(args []string) error

// ConfigFile is a config file read and checked: the parameters it sets,
// in the order they first appear, with their values as CONFIG GET shows
// them.
type ConfigFile struct {
	path   string
	own    map[string]OwnDirective
	order  []*configParam
	values map[*configParam]string
}

// Path is the file's path, made absolute (Redis keeps the absolute path
// too, so CONFIG REWRITE finds it whatever the directory is).
func (f *ConfigFile) Path() string { return f.path }

// Value is the value the file gives a registry parameter, as CONFIG GET
// would show it; ok is false when the file does not set it.
func (f *ConfigFile) Value(name string) (v string, ok bool) {
	p := configTable.lookup(name)
	if p == nil {
		return "", false
	}
	v, ok = f.values[p]
	return v, ok
}

// ConfigFileError is a config file refused at start, shown as Redis shows
// it: the line number (from 1) and the line, then the reason.
type ConfigFileError struct {
	File string // the file holding the line: an included file names itself
	Line int
	Text string
	Err  error
}

func (e *ConfigFileError) Error() string {
	where := ""
	if e.Line > 0 {
		where = fmt.Sprintf("Reading the configuration file, at line %d\n>>> '%s'\n", e.Line, e.Text)
	}
	return fmt.Sprintf("\n*** FATAL CONFIG FILE ERROR (Redis %s) ***\n%s%v\n", Version, where, e.Err)
}

func (e *ConfigFileError) Unwrap() error { return e.Err }

// Redis's texts for a bad line.
var (
	errConfigDirective   = resp.NewError("Bad directive or wrong number of arguments")
	errConfigReplicaOf   = errors.New("replicaof directive not allowed in cluster mode")
	errConfigUnbalanced  = resp.NewError("Unbalanced quotes in configuration line")
	errConfigRename      = errors.New("rename-command is not supported by slotraft (commands keep their names; use ACL rules to deny a command)")
	errConfigIncludeLoop = errors.New("include nests too deep (an include loop?)")
)

// maxIncludeDepth bounds nested includes: a file that includes itself
// would otherwise never end (Redis recurses until it runs out of stack).
const maxIncludeDepth = 16

// ReadConfigFile reads the config file at path. own maps the lowercase
// names of the caller's directives to their appliers; a registry
// parameter's name is never looked up there.
func ReadConfigFile(path string, own map[string]OwnDirective) (*ConfigFile, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	f := &ConfigFile{path: abs, own: own, values: map[*configParam]string{}}
	return f.checked(f.load(abs, 0))
}

// parseConfig reads text as a config file's content; the result has no
// path (CONFIG REWRITE needs one: tests only).
func parseConfig(text string, own map[string]OwnDirective) (*ConfigFile, error) {
	f := &ConfigFile{own: own, values: map[*configParam]string{}}
	return f.checked(f.parse("", text, 0))
}

// checked is f once read without err and checked, or the error.
func (f *ConfigFile) checked(err error) (*ConfigFile, error) {
	if err == nil {
		err = f.check()
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// check is Redis's sanity check after the last line (no line to name):
// a cluster node replicates no master.
func (f *ConfigFile) check() error {
	if v, ok := f.Value("replicaof"); ok && v != "" {
		return &ConfigFileError{File: f.path, Err: errConfigReplicaOf}
	}
	return nil
}

// load reads one file (the main one or an included one).
func (f *ConfigFile) load(path string, depth int) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return &configOpenError{path, err}
	}
	return f.parse(path, string(data), depth)
}

// configOpenError is Redis's text for a config file it cannot read.
type configOpenError struct {
	path string
	err  error
}

func (e *configOpenError) Error() string {
	return fmt.Sprintf("Fatal error, can't open config file '%s': %s", e.path, strerror(e.err))
}

func (e *configOpenError) Unwrap() error { return e.err }

// parse reads text line by line as Redis's loadServerConfigFromString.
func (f *ConfigFile) parse(file, text string, depth int) error {
	for i, line := range strings.Split(text, "\n") {
		line = strings.Trim(line, " \t\r\n")
		if line == "" || line[0] == '#' {
			continue
		}
		if err := f.directive(line, depth); err != nil {
			var nested *ConfigFileError
			if errors.As(err, &nested) {
				return err // an included file's line
			}
			return &ConfigFileError{File: file, Line: i + 1, Text: line, Err: err}
		}
	}
	return nil
}

// directive applies one non-empty, non-comment line.
func (f *ConfigFile) directive(line string, depth int) error {
	raw, ok := resp.SplitArgs([]byte(line))
	if !ok {
		return errConfigUnbalanced
	}
	if len(raw) == 0 {
		return nil
	}
	args := make([]string, len(raw))
	for i, a := range raw {
		args[i] = string(a)
	}
	name := strings.ToLower(args[0])
	if p := configTable.lookup(name); p != nil {
		return f.setParam(p, args[1:])
	}
	switch {
	case name == "include" && len(args) == 2:
		if depth >= maxIncludeDepth {
			return errConfigIncludeLoop
		}
		return f.include(args[1], depth+1)
	case name == "rename-command":
		return errConfigRename
	case f.own[name] != nil:
		return f.own[name](args[1:])
	}
	return errConfigDirective
}

// include loads a file, or every file a glob matches (none is no error,
// as Redis, so an empty conf.d may be included).
func (f *ConfigFile) include(pattern string, depth int) error {
	if !strings.ContainsAny(pattern, "*?[") {
		return f.load(pattern, depth)
	}
	paths, err := filepath.Glob(pattern)
	if err != nil {
		return fmt.Errorf("include %s: %w", pattern, err)
	}
	for _, p := range paths {
		if err := f.load(p, depth); err != nil {
			return err
		}
	}
	return nil
}

// setParam parses a parameter's arguments as Redis does from a file: one
// argument, or for a multi-argument parameter several (one non-empty
// argument is split again, so `save "3600 1"` works). A later line
// replaces an earlier one, except save, whose lines add up, and
// client-output-buffer-limit, whose lines each set their class.
func (f *ConfigFile) setParam(p *configParam, args []string) error {
	if !p.multiArg && len(args) != 1 {
		return errConfigArgCount
	}
	if p.multiArg && len(args) == 1 && args[0] != "" {
		split, ok := resp.SplitArgs([]byte(args[0]))
		if !ok {
			return errConfigUnbalanced
		}
		args = args[:0]
		for _, a := range split {
			args = append(args, string(a))
		}
	}
	cur, seen := f.values[p]
	if !seen {
		cur = p.def
		f.order = append(f.order, p)
	}
	v, err := p.parse(cur, strings.Join(args, " "))
	if err != nil {
		return err
	}
	if p.name == "save" && seen && cur != "" && v.text != "" {
		v.text = cur + " " + v.text
	}
	f.values[p] = v.text
	return nil
}

// changes are the file's parameters as one CONFIG SET.
func (f *ConfigFile) changes() []configChange {
	out := make([]configChange, 0, len(f.order))
	for _, p := range f.order {
		out = append(out, configChange{p: p, name: p.name, value: f.values[p]})
	}
	return out
}

// UseConfigFile gives the server the file's parameters (through their
// behaviours, as CONFIG SET) and makes CONFIG REWRITE write that file.
// Call it before Serve.
func (s *Server) UseConfigFile(f *ConfigFile) error {
	if err := s.cfg.set(s, f.changes()); err != nil {
		return fmt.Errorf("config file %s: %w", f.path, err)
	}
	s.cfgFile.Store(f)
	return nil
}

// SetConfig sets one parameter as CONFIG SET does (a process's flag that
// is also a Redis parameter, such as --protected-mode).
func (s *Server) SetConfig(name, value string) error {
	p := s.cfg.reg.lookup(name)
	if p == nil {
		return fmt.Errorf("unknown parameter %q", name)
	}
	return s.cfg.set(s, []configChange{{p: p, name: name, value: value}})
}

// strerror is the C library's text for err's errno, as Redis writes it
// ("No such file or directory"); another error's own text otherwise.
func strerror(err error) string {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err.Error()
	}
	t := errno.Error()
	return strings.ToUpper(t[:1]) + t[1:]
}
