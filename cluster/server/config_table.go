package server

import (
	"errors"
	"strings"
	"sync"
)

// The CONFIG registry: every parameter of Redis 7.2's config table
// (config_params.go), its syntax, default and flags, and this server's
// current values. Parameters are per node, as in Redis Cluster.

// configFlag is a parameter's Redis flags that CONFIG acts on.
type configFlag uint8

const (
	cfgImmutable configFlag = 1 << iota // CONFIG SET refuses it: "can't set immutable config"
	cfgProtected                        // refused unless enable-protected-configs allows it
	cfgHidden                           // CONFIG GET matches it by its exact name only, never by a pattern
)

// configParam is one parameter. parse turns a CONFIG SET value into the
// value CONFIG GET shows (cur is the current value: client-output-buffer-limit
// keeps the classes a value does not name). The optional hooks tie a
// parameter to a behaviour: apply makes a new value take effect (an error
// rolls the whole CONFIG SET back), get reads a value that lives elsewhere.
type configParam struct {
	name, alias string
	flags       configFlag
	def         string
	parse       func(cur, value string) (configValue, error)

	apply func(s *Server, v configValue) error
	get   func(s *Server) string
	// shared is a behaviour several parameters share (the tls-* ones): run
	// once per CONFIG SET that changes any of them, after all its values
	// are stored, with every parameter's value at hand, as Redis's shared
	// apply functions.
	shared *sharedBehaviour

	multiArg bool                                             // a file line may give it several arguments
	rewrite  func(st *rewriteState, p *configParam, v string) // its CONFIG REWRITE lines; nil: "name value"

	idx int // position in the registry, where its value is kept
}

// onApply and onGet attach a behaviour to a parameter of the table.
func (p *configParam) onApply(f func(*Server, configValue) error) *configParam {
	p.apply = f
	return p
}

// multi marks a parameter that takes several arguments on a file line
// (Redis's MULTI_ARG_CONFIG).
func (p *configParam) multi() *configParam {
	p.multiArg = true
	return p
}

// rewriteAs sets how CONFIG REWRITE writes the parameter.
func (p *configParam) rewriteAs(f func(st *rewriteState, p *configParam, v string)) *configParam {
	p.rewrite = f
	return p
}

func (p *configParam) onGet(f func(*Server) string) *configParam {
	p.get = f
	return p
}

// configRegistry is a set of parameters and their names (aliases too),
// lowercase.
type configRegistry struct {
	params []*configParam
	byName map[string]*configParam
}

func newConfigRegistry(params ...*configParam) *configRegistry {
	r := &configRegistry{params: params, byName: map[string]*configParam{}}
	for i, p := range params {
		p.idx = i
		for _, n := range []string{p.name, p.alias} {
			if n == "" {
				continue
			}
			if _, dup := r.byName[n]; dup {
				panic("config: parameter " + n + " registered twice")
			}
			r.byName[n] = p
		}
	}
	return r
}

func (r *configRegistry) lookup(name string) *configParam {
	return r.byName[strings.ToLower(name)]
}

// configValues are a server's current values, one per parameter of its
// registry, each as CONFIG GET shows it.
type configValues struct {
	mu   sync.Mutex // held across a whole CONFIG SET: they apply one at a time
	reg  *configRegistry
	vals []string
}

func newConfigValues(reg *configRegistry) *configValues {
	c := &configValues{reg: reg, vals: make([]string, len(reg.params))}
	for i, p := range reg.params {
		c.vals[i] = p.def
	}
	return c
}

// applyDefaults gives the behaviours their parameters' defaults (those
// whose value lives elsewhere, with a get hook, start from their own).
func (c *configValues) applyDefaults(s *Server) {
	for _, p := range c.reg.params {
		if p.apply == nil || p.get != nil {
			continue
		}
		v, err := p.parse(p.def, p.def)
		if err != nil {
			panic("config: default of " + p.name + ": " + err.Error())
		}
		_ = p.apply(s, v) // the appliers of defaults cannot fail
	}
}

// record stores a value the server itself decides (the port it listens
// on), with no behaviour to apply.
func (c *configValues) record(name, text string) {
	if p := c.reg.lookup(name); p != nil {
		c.mu.Lock()
		c.vals[p.idx] = text
		c.mu.Unlock()
	}
}

// current is p's value; the caller holds mu.
func (c *configValues) current(s *Server, p *configParam) string {
	if p.get != nil {
		return p.get(s)
	}
	return c.vals[p.idx]
}

// value is p's value now.
func (c *configValues) value(s *Server, p *configParam) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current(s, p)
}

// configChange is one parameter of a CONFIG SET with its new value; name
// is the registered name the client used (an alias stays the alias: Redis
// names it so in its errors).
type configChange struct {
	p     *configParam
	name  string
	value string
}

// configSetError is a CONFIG SET refused: name is the argument Redis
// names in its reply, err the reason.
type configSetError struct {
	name string
	err  error
}

func (e *configSetError) Error() string { return e.name + ": " + e.err.Error() }
func (e *configSetError) Unwrap() error { return e.err }

// set applies changes all or nothing: every value is parsed first (a bad
// one changes nothing), then each is stored and applied in order; if an
// apply fails, the ones before it get their old values back.
func (c *configValues) set(s *Server, changes []configChange) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	parsed := make([]configValue, len(changes))
	for i, ch := range changes {
		v, err := ch.p.parse(c.current(s, ch.p), ch.value)
		if err != nil {
			return &configSetError{ch.name, err}
		}
		parsed[i] = v
	}
	olds := make([]string, len(changes))
	for i, ch := range changes {
		olds[i] = c.current(s, ch.p)
		if err := c.store(s, ch.p, parsed[i]); err != nil {
			c.restore(s, changes[:i+1], olds)
			return &configSetError{ch.name, err}
		}
	}
	if name, err := c.runAfters(s, changes); err != nil {
		c.restore(s, changes, olds)
		_, _ = c.runAfters(s, changes) // back to what the old values gave
		return &configSetError{name, err}
	}
	return nil
}

// sharedBehaviour is the behaviour of a set of parameters that only make
// sense together (a certificate and its key).
type sharedBehaviour struct {
	run func(s *Server, val func(name string) string) error
}

// sharing gives p the behaviour b shares with other parameters.
func (p *configParam) sharing(b *sharedBehaviour) *configParam {
	p.shared = b
	return p
}

// runAfters runs the shared behaviours of changes' parameters once each,
// in order; on an error it names the parameter that brought it in.
// The caller holds mu.
func (c *configValues) runAfters(s *Server, changes []configChange) (string, error) {
	val := func(name string) string { return c.current(s, c.reg.lookup(name)) }
	ran := map[*sharedBehaviour]bool{}
	for _, ch := range changes {
		if b := ch.p.shared; b != nil && !ran[b] {
			ran[b] = true
			if err := b.run(s, val); err != nil {
				return ch.name, err
			}
		}
	}
	return "", nil
}

func (c *configValues) store(s *Server, p *configParam, v configValue) error {
	if p.apply != nil {
		if err := p.apply(s, v); err != nil {
			return err
		}
	}
	c.vals[p.idx] = v.text
	return nil
}

// restore puts back the values changes replaced.
func (c *configValues) restore(s *Server, changes []configChange, olds []string) {
	for i := len(changes) - 1; i >= 0; i-- {
		p := changes[i].p
		v, err := p.parse(olds[i], olds[i])
		if err != nil {
			v = configValue{text: olds[i]} // replicaof's "": shown, never set
		}
		_ = c.store(s, p, v) // it held this value a moment ago
	}
}

var errConfigImmutable = errors.New("can't set immutable config")
