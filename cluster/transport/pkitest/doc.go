// Package pkitest makes a throwaway CA and node certificates for tests of
// the cluster bus's TLS from an operator's PKI (transport.BusTLS): in
// memory, or as the PEM files `slotraft server --bus-tls-*` reads.
package pkitest
