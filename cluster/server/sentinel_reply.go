package server

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slotraft/slotraft/cluster"
	"github.com/slotraft/slotraft/resp"
)

// An instance as SENTINEL MASTER(S), REPLICAS and SENTINELS render it:
// Sentinel's addReplySentinelRedisInstance, its fields in its order, every
// value a bulk string (a map in RESP3, a flat array in RESP2). What each
// field means here is in docs/sentinel.md.

// instanceFields accumulates one instance's fields.
type instanceFields []resp.Value

func (fs *instanceFields) str(k, v string) {
	*fs = append(*fs, resp.BulkString(k), resp.BulkString(v))
}

func (fs *instanceFields) num(k string, v int64) { fs.str(k, strconv.FormatInt(v, 10)) }

func (fs *instanceFields) ms(k string, since, now time.Time) {
	if since.IsZero() {
		fs.num(k, 0)
		return
	}
	fs.num(k, now.Sub(since).Milliseconds())
}

// instanceKind is what an instance is to its master.
type instanceKind int

const (
	kindMaster instanceKind = iota
	kindReplica
	kindSentinel
)

// flags is Sentinel's flags field of in, a kind of instance.
func flagsOf(in *sentinelInstance, kind instanceKind, odown, disconnected, failover bool) string {
	var fl []string
	if in.sdown {
		fl = append(fl, "s_down")
	}
	if odown {
		fl = append(fl, "o_down")
	}
	fl = append(fl, [...]string{"master", "slave", "sentinel"}[kind])
	if disconnected {
		fl = append(fl, "disconnected")
	}
	if failover {
		fl = append(fl, "failover_in_progress")
	}
	return strings.Join(fl, ",")
}

// common are the fields every kind of instance has, up to
// down-after-milliseconds.
func (f *Sentinel) common(fs *instanceFields, in *sentinelInstance, name, runid, flags, failoverState string, odown bool, odownSince, now time.Time) {
	host, port := splitHostPort(in.addr)
	fs.str("name", name)
	fs.str("ip", host)
	fs.str("port", port)
	fs.str("runid", runid)
	fs.str("flags", flags)
	fs.num("link-pending-commands", 0)
	fs.num("link-refcount", 1)
	if failoverState != "" {
		fs.str("failover-state", failoverState)
	}
	// A ping is pending from the moment the instance went down.
	if in.sdown {
		fs.ms("last-ping-sent", in.sdownSince, now)
	} else {
		fs.num("last-ping-sent", 0)
	}
	fs.ms("last-ok-ping-reply", in.okAt, now)
	fs.ms("last-ping-reply", in.okAt, now)
	if in.sdown {
		fs.ms("s-down-time", in.sdownSince, now)
	}
	if odown {
		fs.ms("o-down-time", odownSince, now)
	}
	fs.num("down-after-milliseconds", f.s.n.ElectionTimeout().Milliseconds())
}

// roleFields are a master's or replica's info-refresh and role fields.
func (f *Sentinel) roleFields(fs *instanceFields, in *sentinelInstance, role string, now time.Time) {
	_, at, ok := f.mon.reports.get(in.id)
	if ok {
		fs.ms("info-refresh", at, now)
	} else {
		fs.num("info-refresh", 0)
	}
	fs.str("role-reported", role)
	fs.ms("role-reported-time", in.since, now)
}

// runID is the run id node id last reported, "" if none yet.
func (f *Sentinel) runID(id string) string {
	rep, _, _ := f.mon.reports.get(id)
	return rep.RunID
}

// masterReply renders ms (address known) for observation o; term is its
// group's Raft term (the config epoch).
func (f *Sentinel) masterReply(ms *sentinelMaster, o *sentinelObservation, term uint64, now time.Time) resp.Value {
	var fs instanceFields
	fo := ms.failover
	state := ""
	if fo != nil {
		state = "wait_promotion"
	}
	f.common(&fs, &ms.sentinelInstance, ms.name, f.runID(ms.id),
		flagsOf(&ms.sentinelInstance, kindMaster, ms.odown, !o.alive(ms.id), fo != nil), state, ms.odown, ms.odownSince, now)
	f.roleFields(&fs, &ms.sentinelInstance, "master", now)
	fs.num("config-epoch", int64(term))
	fs.num("num-slaves", int64(len(ms.replicas)))
	fs.num("num-other-sentinels", int64(len(ms.sentinels)))
	fs.num("quorum", int64(o.quorum()))
	fs.num("failover-timeout", cluster.TransferWait.Milliseconds())
	fs.num("parallel-syncs", int64(max(1, len(ms.replicas))))
	return resp.Map(fs...)
}

// replicaProgress is how far one replica follows its leader.
type replicaProgress struct {
	applied uint64
	ok      bool // it answered: its link to the master is up
}

// replicaReply renders replica r of ms.
func (f *Sentinel) replicaReply(ms *sentinelMaster, r *sentinelInstance, o *sentinelObservation, p replicaProgress, now time.Time) resp.Value {
	var fs instanceFields
	f.common(&fs, r, r.addr, f.runID(r.id), flagsOf(r, kindReplica, false, !o.alive(r.id), false), "", false, time.Time{}, now)
	f.roleFields(&fs, r, "slave", now)
	link := p.ok && !ms.sdown
	if link {
		fs.num("master-link-down-time", 0)
		fs.str("master-link-status", "ok")
	} else {
		since := r.sdownSince
		if ms.sdown && (since.IsZero() || ms.sdownSince.After(since)) {
			since = ms.sdownSince
		}
		fs.ms("master-link-down-time", since, now)
		fs.str("master-link-status", "err")
	}
	host, port := splitHostPort(ms.addr)
	fs.str("master-host", host)
	fs.str("master-port", port)
	fs.num("slave-priority", 100)
	fs.num("slave-repl-offset", int64(p.applied))
	fs.num("replica-announced", 1)
	return resp.Map(fs...)
}

// sentinelReply renders another facade.
func (f *Sentinel) sentinelReply(in *sentinelInstance, o *sentinelObservation, now time.Time) resp.Value {
	var fs instanceFields
	id := NodeID(in.id)
	f.common(&fs, in, id, id, flagsOf(in, kindSentinel, false, !o.alive(in.id), false), "", false, time.Time{}, now)
	fs.ms("last-hello-message", in.okAt, now)
	fs.str("voted-leader", "?")
	fs.num("voted-leader-epoch", 0)
	return resp.Map(fs...)
}

// sortedInstances are recs in node id order.
func sortedInstances(recs map[string]*sentinelInstance) []*sentinelInstance {
	out := make([]*sentinelInstance, 0, len(recs))
	for _, in := range recs {
		out = append(out, in)
	}
	slices.SortFunc(out, func(a, b *sentinelInstance) int { return strings.Compare(a.id, b.id) })
	return out
}
