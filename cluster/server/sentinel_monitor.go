package server

import (
	"net"
	"slices"
	"strconv"
	"sync"
	"time"
)

// The facade's monitor: what it knows of each named master (its address,
// its replicas, the other facades, which of them are down) and the events
// Sentinel publishes when that changes, formatted as Sentinel's
// sentinelEvent formats them. It reads the deployment (observe) every
// sentinelTick and before every command, so that replies and events tell
// one story: a reply never names a master whose +switch-master has not
// been published.
//
// Down, as Sentinel's flags say it:
//   - the master is s_down when no leader of its group is known (an
//     election, a lost quorum) or gossip agrees its node is dead; for a
//     proxy, when its node is not alive in gossip. Raft is the authority
//     on leadership: a leader gossip merely suspects still serves.
//   - it is o_down when s_down and gossip agrees its node is dead (gossip's
//     agreement plays Sentinel's quorum of sentinels).
//   - a replica or another facade is s_down when gossip does not see its
//     node alive.

// sentinelTick is how often the monitor reads the deployment.
const sentinelTick = 100 * time.Millisecond

// sentinelInstance is the facade's record of one instance of a master.
type sentinelInstance struct {
	id         string // node id ("" for a master never known)
	addr       string // host:port
	sdown      bool
	sdownSince time.Time
	okAt       time.Time // last seen up (last-ok-ping-reply)
	since      time.Time // when the record was made
}

// sentinelMaster is one named master.
type sentinelMaster struct {
	name string
	sentinelInstance
	odown      bool
	odownSince time.Time
	replicas   map[string]*sentinelInstance // by node id
	sentinels  map[string]*sentinelInstance // the other facades, by node id
	failover   *sentinelFailoverState       // SENTINEL FAILOVER in progress, nil if none
}

// sentinelEvent is one event: its channel (the event type) and message.
type sentinelEvent struct{ kind, msg string }

type sentinelMonitor struct {
	f  *Sentinel
	mu sync.Mutex // held across a whole refresh: observations apply in order
	// masters, in configuration order; started: the first refresh ran
	// (it records the deployment without events, as a starting Sentinel
	// learns its instances).
	masters []*sentinelMaster
	started bool
	reports *reportCache
}

func newSentinelMonitor(f *Sentinel) *sentinelMonitor {
	m := &sentinelMonitor{f: f, reports: newReportCache(f)}
	for _, n := range f.names {
		m.masters = append(m.masters, &sentinelMaster{name: n,
			replicas: map[string]*sentinelInstance{}, sentinels: map[string]*sentinelInstance{}})
	}
	return m
}

// run refreshes every sentinelTick until the facade closes.
func (m *sentinelMonitor) run() {
	t := time.NewTicker(sentinelTick)
	defer t.Stop()
	for {
		m.refresh(nil)
		m.reports.refresh(m.instanceIDs())
		select {
		case <-m.f.ctx.Done():
			m.reports.wait()
			return
		case <-t.C:
		}
	}
}

// refresh reads the deployment, updates every master, publishes the
// events, and runs fn (if not nil) on the state so updated, under the
// monitor's lock.
func (m *sentinelMonitor) refresh(fn func(o *sentinelObservation)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.f.observe()
	now := time.Now()
	self := m.f.s.n.Self().ID
	var evs []sentinelEvent
	demoted := false
	for _, ms := range m.masters {
		var d bool
		evs, d = ms.update(o, self, now, !m.started, evs)
		demoted = demoted || d
	}
	m.started = true
	for _, e := range evs {
		m.f.publish(e)
	}
	if demoted {
		m.f.s.dropNormalClients()
	}
	if fn != nil {
		fn(o)
	}
}

// master finds a master by name; nil if the facade has no such name.
func (m *sentinelMonitor) master(name []byte) *sentinelMaster {
	for _, ms := range m.masters {
		if ms.name == string(name) {
			return ms
		}
	}
	return nil
}

// instanceIDs are the nodes the facade reports on (masters and replicas).
func (m *sentinelMonitor) instanceIDs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	for _, ms := range m.masters {
		if ms.id != "" && !slices.Contains(ids, ms.id) {
			ids = append(ids, ms.id)
		}
		for id := range ms.replicas {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// update brings ms to observation o and appends the events that makes;
// quiet records without events. demoted: the master moved away from
// this node (self), which then drops its data-port clients (Sentinel
// kills a demoted master's clients: CLIENT KILL TYPE normal).
func (ms *sentinelMaster) update(o *sentinelObservation, self string, now time.Time, quiet bool, evs []sentinelEvent) ([]sentinelEvent, bool) {
	// A master first known now is recorded as found, without events.
	quiet = quiet || ms.addr == ""
	emit := func(kind, msg string) {
		if !quiet {
			evs = append(evs, sentinelEvent{kind, msg})
		}
	}
	demoted := false
	id, addr, ok := o.masterCandidate(self, ms.id)
	switch {
	case ok && addr != ms.addr:
		if ms.addr != "" {
			oh, op := splitHostPort(ms.addr)
			nh, np := splitHostPort(addr)
			emit("+switch-master", ms.name+" "+oh+" "+op+" "+nh+" "+np)
			demoted = o.oneGroup() && ms.id == self && id != self
		}
		ms.sentinelInstance = sentinelInstance{id: id, addr: addr, since: now, okAt: now}
		ms.odown = false
		delete(ms.replicas, id)
	case !ok && ms.addr == "" && o.oneGroup() && len(o.members) > 0:
		// No leader yet, and none ever seen: the master is the group's
		// preferred leader, down until a leader is known.
		first := o.members[0]
		ms.sentinelInstance = sentinelInstance{id: first, addr: o.clientAddr(first), since: now, okAt: now}
	}
	if ms.addr == "" {
		return evs, demoted
	}
	if !ms.masterDown(o) {
		ms.okAt = now
	}
	if down := ms.masterDown(o); down != ms.sdown {
		ms.sdown, ms.sdownSince = down, now
		emit(sign(down)+"sdown", ms.describe())
	}
	if od := ms.sdown && o.gone(ms.id); od != ms.odown {
		ms.odown, ms.odownSince = od, now
		msg := ms.describe()
		if od {
			msg += " #quorum " + strconv.Itoa(o.usableVoters()) + "/" + strconv.Itoa(o.quorum())
		}
		emit(sign(od)+"odown", msg)
	}
	at := " @ " + ms.describe()[len("master "):]
	evs = ms.track(ms.replicas, o.replicaIDs(ms.id), o.clientAddr, o, now, quiet, evs,
		func(in *sentinelInstance) string { return "slave " + in.addr + " " + spaced(in.addr) + at }, "+slave")
	var others []string
	for id := range o.facades {
		if id != self {
			others = append(others, id)
		}
	}
	slices.Sort(others)
	evs = ms.track(ms.sentinels, others, func(id string) string { return o.facades[id] }, o, now, quiet, evs,
		func(in *sentinelInstance) string { return "sentinel " + NodeID(in.id) + " " + spaced(in.addr) + at }, "+sentinel")
	return evs, demoted
}

// masterDown is the master's s_down as the file's comment defines it.
func (ms *sentinelMaster) masterDown(o *sentinelObservation) bool {
	if o.oneGroup() {
		return o.leader != ms.id || o.gone(ms.id)
	}
	return !o.alive(ms.id) || o.proxies[ms.id] != ms.addr
}

// track brings the records of one kind of instance (replicas, facades)
// to the ids listed now: a new one is announced with added, a change of
// its liveness with ±sdown; one no longer listed is forgotten.
func (ms *sentinelMaster) track(recs map[string]*sentinelInstance, ids []string, addrOf func(string) string,
	o *sentinelObservation, now time.Time, quiet bool, evs []sentinelEvent,
	describe func(*sentinelInstance) string, added string) []sentinelEvent {
	listed := map[string]bool{}
	for _, id := range ids {
		addr := addrOf(id)
		if addr == "" {
			continue
		}
		listed[id] = true
		down := !o.alive(id)
		in := recs[id]
		if in == nil || in.addr != addr {
			in = &sentinelInstance{id: id, addr: addr, since: now, okAt: now}
			recs[id] = in
			if !quiet {
				evs = append(evs, sentinelEvent{added, describe(in)})
			}
		}
		if !down {
			in.okAt = now
		}
		if down != in.sdown {
			in.sdown, in.sdownSince = down, now
			if !quiet {
				evs = append(evs, sentinelEvent{sign(down) + "sdown", describe(in)})
			}
		}
	}
	for id := range recs {
		if !listed[id] {
			delete(recs, id)
		}
	}
	return evs
}

// describe is Sentinel's "%@" of a master: "master <name> <ip> <port>".
func (ms *sentinelMaster) describe() string { return "master " + ms.name + " " + spaced(ms.addr) }

func sign(up bool) string {
	if up {
		return "+"
	}
	return "-"
}

// splitHostPort splits host:port for replies and events ("?" and "0"
// for an address that is not one).
func splitHostPort(addr string) (host, port string) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "?", "0"
	}
	return h, p
}

// spaced is "host port", as events print an address.
func spaced(addr string) string {
	h, p := splitHostPort(addr)
	return h + " " + p
}

// publish delivers an event to the facade's subscribers and logs it, as
// Sentinel logs its events.
func (f *Sentinel) publish(e sentinelEvent) {
	f.reg.publish(kindChannel, []byte(e.kind), []byte(e.msg))
	f.log.Info("sentinel event", "event", e.kind, "detail", e.msg)
}
