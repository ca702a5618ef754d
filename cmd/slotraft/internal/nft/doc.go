// Package nft cuts traffic between nodes on distinct loopback addresses
// with an nftables table of the process's own (nft.go): the chaos
// playground's partitions (`slotraft chaos run`) and the dashboard's
// partition button (`slotraft dev --chaos-ui`, `chaos run --ui`) share
// it. It needs root or CAP_NET_ADMIN, and never touches another table.
package nft
