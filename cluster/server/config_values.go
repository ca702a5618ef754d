package server

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/slotraft/slotraft/resp"
)

// The value syntaxes of CONFIG SET, parsed and rendered as Redis 7.2's
// config.c does. A parser returns the value as CONFIG GET will show it
// (its canonical text) or an error whose text is what Redis puts after
// "CONFIG SET failed (possibly related to argument '<name>') - ".

// Redis's texts for a bad value.
var (
	errConfigYesNo     = errors.New("argument must be 'yes' or 'no'")
	errConfigInt       = errors.New("argument couldn't be parsed into an integer")
	errConfigMemory    = errors.New("argument must be a memory value")
	errConfigMemPct    = errors.New("argument must be a memory or percent value")
	errConfigOctal     = errors.New("argument couldn't be parsed as an octal number")
	errConfigArgCount  = errors.New("wrong number of arguments")
	errConfigSave      = resp.NewError("Invalid save parameters")
	errConfigOOMValues = resp.NewError("Invalid oom-score-adj-values, elements must be between -2000 and 2000.")
	errConfigBindMax   = resp.NewError("Too many bind addresses specified.")
	errConfigPercentil = resp.NewError("Invalid latency-tracking-info-percentiles parameters")
	errConfigPctRange  = errors.New("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
	errConfigMasterPrt = resp.NewError("Invalid master port")
)

// configValue is a parsed value: its canonical text and, for numbers,
// enums and yes/no, its number (what a behaviour reads).
type configValue struct {
	text string
	num  int64
}

func parseYesNo(v string) (configValue, error) {
	switch {
	case strings.EqualFold(v, "yes"):
		return configValue{"yes", 1}, nil
	case strings.EqualFold(v, "no"):
		return configValue{"no", 0}, nil
	}
	return configValue{}, errConfigYesNo
}

// numUnit is how a number may be written (Redis's MEMORY_CONFIG,
// PERCENT_CONFIG, OCTAL_CONFIG flags).
type numUnit uint8

const (
	unitPlain     numUnit = iota // string2ll
	unitMemory                   // memtoull: 1gb, 100mb, 1k…
	unitMemoryPct                // memory, or a percentage stored negated ("5%" is -5)
	unitOctal                    // strtoll base 8
)

// numSpec is a numeric parameter's syntax and bounds. unsigned compares
// the bounds as C's unsigned types do (Redis's uint, unsigned long long
// and size_t parameters), so -1 is out of range there, not below it.
type numSpec struct {
	lo, hi   int64
	unsigned bool
	unit     numUnit
}

func (n numSpec) parse(v string) (configValue, error) {
	x, err := n.parseNumber(v)
	if err != nil {
		return configValue{}, err
	}
	if err := n.check(x); err != nil {
		return configValue{}, err
	}
	return configValue{n.render(x), x}, nil
}

func (n numSpec) parseNumber(v string) (int64, error) {
	if n.unit == unitMemory || n.unit == unitMemoryPct {
		if m, ok := memToUint(v); ok {
			return int64(m), nil // as C's cast: a value over LLONG_MAX wraps
		}
	}
	switch n.unit {
	case unitMemoryPct:
		if p, ok := parsePercent(v); ok {
			return -p, nil
		}
		return 0, errConfigMemPct
	case unitMemory:
		return 0, errConfigMemory
	case unitOctal:
		if x, err := strconv.ParseInt(v, 8, 64); err == nil {
			return x, nil
		}
		return 0, errConfigOctal
	}
	x, err := resp.ParseInt([]byte(v))
	if err != nil {
		return 0, errConfigInt
	}
	return x, nil
}

// parsePercent reads "<n>%" with n >= 0.
func parsePercent(v string) (int64, bool) {
	if len(v) < 2 || v[len(v)-1] != '%' {
		return 0, false
	}
	p, err := resp.ParseInt([]byte(v[:len(v)-1]))
	return p, err == nil && p >= 0
}

// configRangeError is Redis's "argument must be between <lo> and <hi>
// inclusive" (or its percentage form).
type configRangeError struct{ text string }

func (e *configRangeError) Error() string { return e.text }

func (n numSpec) check(x int64) error {
	if n.unsigned {
		if u := uint64(x); u < uint64(n.lo) || u > uint64(n.hi) {
			verb := "%d"
			if n.unit == unitOctal {
				verb = "%o"
			}
			return &configRangeError{fmt.Sprintf("argument must be between "+verb+" and "+verb+" inclusive", uint64(n.lo), uint64(n.hi))}
		}
		return nil
	}
	if n.unit == unitMemoryPct && x < 0 {
		if x < n.lo {
			return &configRangeError{fmt.Sprintf("percentage argument must be less or equal to %d", -n.lo)}
		}
		return nil
	}
	if x < n.lo || x > n.hi {
		return &configRangeError{fmt.Sprintf("argument must be between %d and %d inclusive", n.lo, n.hi)}
	}
	return nil
}

func (n numSpec) render(x int64) string {
	switch {
	case n.unit == unitMemoryPct && x < 0:
		return strconv.FormatInt(-x, 10) + "%"
	case n.unit == unitMemory || n.unit == unitMemoryPct:
		return strconv.FormatUint(uint64(x), 10)
	case n.unit == unitOctal:
		return strconv.FormatInt(x, 8)
	}
	return strconv.FormatInt(x, 10)
}

// memToUint reads a size as Redis's memtoull: digits and an optional unit
// b, k, kb, m, mb, g, gb (any case; k = 1000, kb = 1024). No digits is 0;
// a number past 2^64-1 saturates and the product wraps, as strtoull and
// C's multiplication do.
func memToUint(s string) (uint64, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	mul, ok := memUnits[strings.ToLower(s[i:])]
	if !ok || i >= 128 {
		return 0, false
	}
	n, err := strconv.ParseUint(s[:i], 10, 64)
	if i > 0 && err != nil {
		n = math.MaxUint64
	}
	return n * mul, true
}

var memUnits = map[string]uint64{"": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000 * 1000, "mb": 1 << 20, "g": 1000 * 1000 * 1000, "gb": 1 << 30}

// splitMultiArg splits a multi-argument value as Redis's sdssplitlen on one
// space: "" is no argument, and two spaces make an empty one.
func splitMultiArg(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, " ")
}

// cStrtoll is C's strtoll in base 10 with the check Redis makes after it
// (nothing may follow the number): leading white space and a sign are
// allowed, no digits at all reads as 0 only for an empty string, and
// overflow saturates.
func cStrtoll(s string) (int64, bool) {
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	if t == "" {
		return 0, s == ""
	}
	neg := t[0] == '-'
	if t[0] == '-' || t[0] == '+' {
		t = t[1:]
	}
	if t == "" {
		return 0, false
	}
	var u uint64
	for _, c := range []byte(t) {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = min(u*10+uint64(c-'0'), 1<<63)
	}
	if neg {
		return -int64(u), true // -(1<<63) wraps to itself: LLONG_MIN
	}
	return int64(min(u, math.MaxInt64)), true
}

// configEnum is an enum parameter's names and values, in Redis's order (the
// first name of a value is the one CONFIG GET shows). flags enums take
// several names at once, their values or-ed (shutdown-on-sigint).
type configEnum struct {
	names  []string
	values []int64
	flags  bool
}

func newEnum(flags bool, pairs ...any) *configEnum {
	e := &configEnum{flags: flags}
	for i := 0; i < len(pairs); i += 2 {
		e.names = append(e.names, pairs[i].(string))
		e.values = append(e.values, int64(pairs[i+1].(int)))
	}
	return e
}

func (e *configEnum) parse(v string) (configValue, error) {
	args := []string{v}
	if e.flags {
		args = splitMultiArg(v)
	}
	var x int64
	for _, a := range args {
		i := indexFold(e.names, a)
		if i < 0 {
			return configValue{}, e.err()
		}
		x |= e.values[i]
	}
	if len(args) == 0 {
		return configValue{}, e.err()
	}
	return configValue{e.render(x), x}, nil
}

func indexFold(names []string, s string) int {
	for i, n := range names {
		if strings.EqualFold(n, s) {
			return i
		}
	}
	return -1
}

func (e *configEnum) err() error {
	return errors.New("argument(s) must be one of the following: " + strings.Join(e.names, ", "))
}

// render is Redis's configEnumGetName: the exact value's first name, or
// for flags the names whose bits make up the value, "unknown" otherwise.
func (e *configEnum) render(x int64) string {
	if i := indexOf(e.values, x); i >= 0 {
		return e.names[i]
	}
	var names []string
	left := x
	for i, v := range e.values {
		if e.flags && v != 0 && left&v == v {
			names = append(names, e.names[i])
			left &^= v
		}
	}
	if names == nil || left != 0 {
		return "unknown"
	}
	return strings.Join(names, " ")
}

func indexOf(vs []int64, x int64) int {
	for i, v := range vs {
		if v == x {
			return i
		}
	}
	return -1
}

// parseSave reads "<seconds> <changes> ..." (seconds >= 1, changes >= 0),
// or "" for none.
func parseSave(v string) (configValue, error) {
	args := splitMultiArg(v)
	if len(args) == 1 && args[0] == "" || len(args) == 0 {
		return configValue{}, nil
	}
	if len(args)%2 != 0 {
		return configValue{}, errConfigSave
	}
	parts := make([]string, len(args))
	for i, a := range args {
		x, ok := cStrtoll(a)
		if !ok || (i%2 == 0 && x < 1) || (i%2 == 1 && x < 0) {
			return configValue{}, errConfigSave
		}
		if i%2 == 1 {
			x = int64(int32(x)) // changes is a C int
		}
		parts[i] = strconv.FormatInt(x, 10)
	}
	return configValue{text: strings.Join(parts, " ")}, nil
}

// parseOOMValues reads oom-score-adj-values: three numbers in -2000..2000.
func parseOOMValues(v string) (configValue, error) {
	args := splitMultiArg(v)
	if len(args) != 3 {
		return configValue{}, errConfigArgCount
	}
	for i, a := range args {
		x, ok := cStrtoll(a)
		if !ok || x < -2000 || x > 2000 {
			return configValue{}, errConfigOOMValues
		}
		args[i] = strconv.FormatInt(x, 10)
	}
	return configValue{text: strings.Join(args, " ")}, nil
}

// parseBind reads up to 16 addresses ("" is none).
func parseBind(v string) (configValue, error) {
	args := splitMultiArg(v)
	if len(args) > 16 {
		return configValue{}, errConfigBindMax
	}
	return configValue{text: strings.Join(args, " ")}, nil
}

// parsePercentiles reads latency-tracking-info-percentiles: numbers in
// 0..100, shown as %f without trailing zeros.
func parsePercentiles(v string) (configValue, error) {
	args := splitMultiArg(v)
	if len(args) == 1 && args[0] == "" {
		args = nil
	}
	for i, a := range args {
		f, err := resp.ParseFloat([]byte(a))
		if err != nil {
			return configValue{}, errConfigPercentil
		}
		if f > 100 || f < 0 {
			return configValue{}, errConfigPctRange
		}
		s := strings.TrimRight(strconv.FormatFloat(f, 'f', 6, 64), "0")
		args[i] = strings.TrimSuffix(s, ".")
	}
	return configValue{text: strings.Join(args, " ")}, nil
}

// parseReplicaOf reads "<host> <port>" or "no one" (read from a config
// file only: the parameter is immutable at run time).
func parseReplicaOf(v string) (configValue, error) {
	args := splitMultiArg(v)
	if len(args) != 2 {
		return configValue{}, errConfigArgCount
	}
	if strings.EqualFold(args[0], "no") && strings.EqualFold(args[1], "one") {
		return configValue{}, nil
	}
	port, ok := cStrtoll(args[1])
	if !ok || port < 0 || port > 65535 {
		return configValue{}, errConfigMasterPrt
	}
	return configValue{text: args[0] + " " + strconv.FormatInt(port, 10)}, nil
}
