package server

import (
	"strconv"
	"strings"
	"time"
)

// How the process stops, from SHUTDOWN's options or, for a signal, from
// shutdown-on-sigterm / shutdown-on-sigint, bounded by shutdown-timeout,
// as Redis 7.2's prepareForShutdown. Redis's wait for lagging replicas is
// slotraft's leave: hand the leaderships away, then wait until every
// hosted group has a quorum of caught-up replicas without this node.

// handOffMax bounds the hand-off of the leaderships (its wait for the
// other replicas is shutdown-timeout).
const handOffMax = 10 * time.Second

// ShutdownPlan is how the process stops the node.
type ShutdownPlan struct {
	HandOff bool          // leave first (Node.Leave); false is Redis's NOW
	Wait    time.Duration // shutdown-timeout: how long the leave waits for the other replicas (0: not at all)
	Save    bool          // snapshot every hosted group first (Node.Save)
	Force   bool          // stop even when that snapshot fails
}

// LeaveTimeout bounds the whole leave: the hand-off and the wait.
func (p ShutdownPlan) LeaveTimeout() time.Duration { return handOffMax + p.Wait }

// shutdownWait is shutdown-timeout.
func (s *Server) shutdownWait() time.Duration {
	secs, _ := strconv.ParseInt(s.configValue("shutdown-timeout"), 10, 64)
	return time.Duration(min(secs, int64(24*time.Hour/time.Second))) * time.Second
}

// hasSavePoints says whether save names any point: Redis's default
// shutdown saves then.
func (s *Server) hasSavePoints() bool { return strings.TrimSpace(s.configValue("save")) != "" }

// SignalShutdownPlan is the plan for SIGTERM (term) or SIGINT, from
// shutdown-on-sigterm or shutdown-on-sigint. Their default saves when
// save points are set, as Redis's; it hands off for SIGTERM (one node of
// a running cluster stops, as in a rolling restart) but not for SIGINT,
// which is how a whole local cluster is stopped (Ctrl-C on make run,
// where no other replica would take over): a difference from Redis,
// whose SIGINT waits for replicas too.
func (s *Server) SignalShutdownPlan(term bool) ShutdownPlan {
	name := "shutdown-on-sigint"
	if term {
		name = "shutdown-on-sigterm"
	}
	flags := strings.Fields(s.configValue(name))
	has := func(f string) bool {
		for _, x := range flags {
			if x == f {
				return true
			}
		}
		return false
	}
	return ShutdownPlan{
		HandOff: term && !has("now"),
		Wait:    s.shutdownWait(),
		Save:    has("save") || (!has("nosave") && s.hasSavePoints()),
		Force:   has("force"),
	}
}

// LeavePlan is the plan of a node asked to leave (`slotraft admin
// leave`): hand off, then wait up to shutdown-timeout.
func (s *Server) LeavePlan() ShutdownPlan { return ShutdownPlan{HandOff: true, Wait: s.shutdownWait()} }
