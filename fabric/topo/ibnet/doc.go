// Package ibnet reads (and writes) the fabric files users of real
// InfiniBand clusters already have, into the plain-data topo.Topology and
// topo.Tables the simulator uses:
//
//   - the default text output of infiniband-diags' ibnetdiscover
//     (ReadIBNetDiscover, WriteIBNetDiscover);
//   - linear forwarding table dumps: OpenSM's opensm-lfts.dump and the
//     output of ibroute, dump_fts and dump_lfts.sh (ReadLFTs, WriteLFTs);
//   - a small YAML format for fabrics written by hand (ReadYAML).
//
// Load picks the reader of a topology file by its name and content.
// docs/fabric-files.md describes the formats, how to produce them on a
// cluster, and what is kept and what is ignored.
//
// Every reader returns errors as values, never panics, and names the line
// at fault: errors are *Error values wrapping one of this package's
// sentinels or one of package topo's (test with errors.Is).
package ibnet
