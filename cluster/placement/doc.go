// Package placement decides where slot groups' replicas live.
//
// It owns one pure function, Plan: given the cluster map and what the
// controller (the meta group's leader) knows about liveness at one moment,
// it returns the meta commands to propose now. It admits new nodes,
// removes nodes dead for long enough, repairs under- and over-replicated
// groups, moves one replica at a time to even out load or off draining
// nodes, spreads preferred leaders, removes drained nodes, creates slot
// groups up to a target count and starts slot migrations to even out the
// slots. It does no I/O and reads no clock, so the same input
// always gives the same plan; the controller calls it again after the
// commands are applied, and each call makes only small, safe steps.
package placement
