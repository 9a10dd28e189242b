package host

import (
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
)

// DefaultPort is the TCP port of the out-of-band coordinator (node 0) when
// the peers list or the environment names a host without a port.
const DefaultPort = 17219

// Bootstrap places this process in a distributed job: its rank, the number
// of nodes, and where node 0 listens for the out-of-band channel (the other
// nodes connect to it; only node 0 listens).
type Bootstrap struct {
	Rank int // this process's node id, 0..Size-1
	Size int // nodes in the job
	// Coordinator is node 0's "host:port". Node 0 listens on that port on
	// every interface.
	Coordinator string
	// Peers optionally lists every node's address, Peers[0] being the
	// coordinator; the others serve only to name nodes in error messages.
	Peers []string
	// Job identifies the job (its launcher's job and step, or a nonce
	// RDMASHUFFLE_JOB gives): every process of a job has the same, and
	// node 0 refuses a process of another job that reaches its port (two
	// jobs on one host) without failing its own. Empty when the launcher
	// gives none; node 0 then refuses only processes that name a job.
	Job string
	// Source says where the values came from, for messages.
	Source string
}

// Name is how messages refer to node r: "node 2 (host:port)" when the
// peers list names it, else "node 2".
func (b Bootstrap) Name(r int) string {
	switch {
	case r >= 0 && r < len(b.Peers):
		return fmt.Sprintf("node %d (%s)", r, b.Peers[r])
	case r == 0 && b.Coordinator != "":
		return fmt.Sprintf("node 0 (%s)", b.Coordinator)
	}
	return fmt.Sprintf("node %d", r)
}

// Environment variables read by BootstrapFromEnv.
const (
	EnvRank        = "RDMASHUFFLE_RANK"        // this node's rank
	EnvSize        = "RDMASHUFFLE_SIZE"        // number of nodes, when no peers list gives it (at most MaxNodes)
	EnvPeers       = "RDMASHUFFLE_PEERS"       // "host:port,host:port,...", node 0 first
	EnvPeersFile   = "RDMASHUFFLE_PEERS_FILE"  // a file with one host[:port] per line, node 0 first
	EnvCoordinator = "RDMASHUFFLE_COORDINATOR" // node 0's host:port, when no peers list is given
	EnvPort        = "RDMASHUFFLE_PORT"        // port for hosts given without one (default: the launcher's, else DefaultPort)
	EnvJob         = "RDMASHUFFLE_JOB"         // the job's identity, the same for every process (explore launch sets a nonce)
)

// BootstrapFromEnv reads the job layout from the environment:
//
//   - rank: from the innermost launcher, which sets its variables last
//     and so is the one that started this process: RDMASHUFFLE_RANK, else
//     OMPI_COMM_WORLD_RANK (Open MPI's mpirun), else PMIX_RANK (PMIx
//     launchers: prterun, srun --mpi=pmix), else PMI_RANK (MPICH, Intel
//     MPI), else SLURM_PROCID (srun); mpirun inside a Slurm allocation
//     thus takes mpirun's rank, not the batch step's;
//   - peers: RDMASHUFFLE_PEERS or the file RDMASHUFFLE_PEERS_FILE;
//   - size: the length of the peers list, else the size the rank's
//     launcher sets (RDMASHUFFLE_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE,
//     SLURM_NTASKS; for PMIx, which sets none, the next of these that is
//     set); a peers list whose length disagrees is an error;
//   - coordinator: the first peer, else RDMASHUFFLE_COORDINATOR, else
//     under Slurm the first host of SLURM_STEP_NODELIST (or
//     SLURM_JOB_NODELIST), where task 0 runs;
//   - port, for hosts given without one: RDMASHUFFLE_PORT, else the
//     first of the ports Slurm reserved for the step on every node
//     (SLURM_STEP_RESV_PORTS, srun --resv-ports) when Slurm gave the
//     rank, else DefaultPort;
//   - job: RDMASHUFFLE_JOB, else the rank's launcher's job: Slurm's
//     SLURM_JOB_ID and SLURM_STEP_ID, Open MPI's
//     OMPI_MCA_ess_base_jobid, PMIx's PMIX_NAMESPACE (MPICH's PMI gives
//     none).
func BootstrapFromEnv() (Bootstrap, error) { return bootstrapFrom(os.Getenv, os.ReadFile) }

func bootstrapFrom(getenv func(string) string, readFile func(string) ([]byte, error)) (Bootstrap, error) {
	var b Bootstrap
	// Rank.
	li := slices.IndexFunc(launchers, func(l launcher) bool { return strings.TrimSpace(getenv(l.rank)) != "" })
	if li < 0 {
		var names []string
		for _, l := range launchers {
			names = append(names, l.rank)
		}
		return b, fmt.Errorf("host: cannot tell this process's rank: none of %s is set (run under srun or mpirun, or set %s)", strings.Join(names, ", "), EnvRank)
	}
	rankVar, rankStr := launchers[li].rank, strings.TrimSpace(getenv(launchers[li].rank))
	rank, err := strconv.Atoi(rankStr)
	if err != nil || rank < 0 {
		return b, fmt.Errorf("host: %s=%q is not a rank (a non-negative integer)", rankVar, rankStr)
	}
	b.Rank = rank
	b.Source = rankVar
	port, portVar, err := portFrom(getenv, rankVar)
	if err != nil {
		return b, err
	}
	if portVar != "" {
		b.Source += ", " + portVar
	}
	b.Job = jobFrom(getenv, rankVar)
	// Peers.
	switch {
	case getenv(EnvPeers) != "":
		b.Peers, err = parsePeerList(strings.Split(getenv(EnvPeers), ","), port, EnvPeers)
		b.Source += ", " + EnvPeers
	case getenv(EnvPeersFile) != "":
		path := getenv(EnvPeersFile)
		data, rerr := readFile(path)
		if rerr != nil {
			return b, fmt.Errorf("host: %s: %w", EnvPeersFile, rerr)
		}
		b.Peers, err = ParsePeers(string(data), port)
		if err != nil {
			err = fmt.Errorf("%s (%s=%s)", err, EnvPeersFile, path)
		}
		b.Source += ", " + path
	}
	if err != nil {
		return b, err
	}
	// Size.
	var sizes []string // the rank's launcher's size first, then the others'
	for _, l := range slices.Concat(launchers[li:], launchers[:li]) {
		if l.size != "" {
			sizes = append(sizes, l.size)
		}
	}
	sizeVar, sizeStr := firstSet(getenv, sizes...)
	if sizeVar != "" {
		n, err := strconv.Atoi(sizeStr)
		if err != nil || n < 1 {
			return b, fmt.Errorf("host: %s=%q is not a number of nodes (a positive integer)", sizeVar, sizeStr)
		}
		if n > MaxNodes {
			return b, fmt.Errorf("host: %s=%d: more than %d nodes in one job", sizeVar, n, MaxNodes)
		}
		if b.Peers != nil && n != len(b.Peers) {
			return b, fmt.Errorf("host: the peers list names %d nodes but %s=%d; they must agree", len(b.Peers), sizeVar, n)
		}
		b.Size = n
	}
	if b.Peers != nil {
		b.Size = len(b.Peers)
	}
	if b.Size == 0 {
		return b, fmt.Errorf("host: cannot tell the number of nodes: give a peers list (%s or %s) or set %s (srun and mpirun set it)", EnvPeers, EnvPeersFile, EnvSize)
	}
	if b.Rank >= b.Size {
		return b, fmt.Errorf("host: rank %d (from %s) outside 0..%d", b.Rank, rankVar, b.Size-1)
	}
	// Coordinator.
	switch {
	case b.Peers != nil:
		b.Coordinator = b.Peers[0]
	case getenv(EnvCoordinator) != "":
		c, err := normalizePeer(getenv(EnvCoordinator), port)
		if err != nil {
			return b, fmt.Errorf("host: %s: %w", EnvCoordinator, err)
		}
		b.Coordinator = c
	default:
		list := getenv("SLURM_STEP_NODELIST")
		if list == "" {
			list = getenv("SLURM_JOB_NODELIST")
		}
		if list == "" {
			return b, fmt.Errorf("host: cannot tell where node 0 listens: set %s, %s or %s (under Slurm, SLURM_STEP_NODELIST gives it)", EnvPeers, EnvPeersFile, EnvCoordinator)
		}
		hosts, err := ExpandHostlist(list)
		if err != nil {
			return b, fmt.Errorf("host: SLURM nodelist: %w", err)
		}
		b.Coordinator = net.JoinHostPort(hosts[0], strconv.Itoa(port))
		b.Source += ", Slurm nodelist"
	}
	return b, nil
}

// portFrom is the port of hosts given without one, and the variable it
// came from (empty for DefaultPort): RDMASHUFFLE_PORT, else the first
// port Slurm reserved for the step when Slurm gave the rank (rankVar), the
// same on every node of the step.
func portFrom(getenv func(string) string, rankVar string) (int, string, error) {
	parse := func(name, s string) (int, error) {
		p, err := strconv.Atoi(s)
		if err != nil || p < 1 || p > 65535 {
			return 0, fmt.Errorf("host: %s=%q is not a TCP port (1..65535)", name, getenv(name))
		}
		return p, nil
	}
	if s := strings.TrimSpace(getenv(EnvPort)); s != "" {
		p, err := parse(EnvPort, s)
		return p, EnvPort, err
	}
	const resv = "SLURM_STEP_RESV_PORTS" // "12000-12003", "12000" or a list of them
	if s := strings.TrimSpace(getenv(resv)); s != "" && rankVar == "SLURM_PROCID" {
		first, _, _ := strings.Cut(s, ",")
		first, _, _ = strings.Cut(first, "-")
		p, err := parse(resv, strings.TrimSpace(first))
		return p, resv, err
	}
	return DefaultPort, "", nil
}

// jobFrom is the job's identity: RDMASHUFFLE_JOB, else the job of the
// launcher that gave the rank (rankVar), prefixed with the launcher's
// name; empty when it gives none. Only the rank's launcher is asked: an
// outer launcher's job is shared by other jobs inside it (mpirun inside a
// Slurm allocation), or differs between the nodes of one job (the Slurm
// steps mpirun's daemons run in).
func jobFrom(getenv func(string) string, rankVar string) string {
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	if j := get(EnvJob); j != "" {
		return j
	}
	switch rankVar {
	case "SLURM_PROCID":
		step := get("SLURM_STEP_ID")
		if step == "" {
			step = get("SLURM_STEPID")
		}
		if id := get("SLURM_JOB_ID"); id != "" {
			return "slurm/" + id + "." + step
		}
	case "OMPI_COMM_WORLD_RANK":
		if id := get("OMPI_MCA_ess_base_jobid"); id != "" {
			return "ompi/" + id
		}
		if ns := get("PMIX_NAMESPACE"); ns != "" {
			return "pmix/" + ns
		}
	case "PMIX_RANK":
		if ns := get("PMIX_NAMESPACE"); ns != "" {
			return "pmix/" + ns
		}
	}
	return ""
}

// MaxNodes is the most nodes a job may have (as many as the simulator
// allows): a size from the environment above it is refused before
// anything is allocated for it.
const MaxNodes = 1 << 15

// launcher is a job launcher's rank and size variables; launchers lists
// them innermost first (see BootstrapFromEnv).
type launcher struct{ rank, size string }

var launchers = []launcher{
	{EnvRank, EnvSize},
	{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
	{"PMIX_RANK", ""},
	{"PMI_RANK", "PMI_SIZE"},
	{"SLURM_PROCID", "SLURM_NTASKS"},
}

func firstSet(getenv func(string) string, names ...string) (string, string) {
	for _, n := range names {
		if v := strings.TrimSpace(getenv(n)); v != "" {
			return n, v
		}
	}
	return "", ""
}

// ParsePeers parses a peers file: one node per line, node 0 first, as
// "host:port", "host" (port defaults to port) or "[ipv6]:port"; blank
// lines and text after '#' are ignored. Errors name the line.
func ParsePeers(text string, port int) ([]string, error) {
	var out []string
	for i, line := range strings.Split(text, "\n") {
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.ContainsAny(line, " \t,") {
			return nil, fmt.Errorf("host: peers file line %d: %q: one host[:port] per line", i+1, line)
		}
		p, err := normalizePeer(line, port)
		if err != nil {
			return nil, fmt.Errorf("host: peers file line %d: %w", i+1, err)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("host: peers file lists no nodes")
	}
	return out, nil
}

func parsePeerList(items []string, port int, what string) ([]string, error) {
	out := make([]string, 0, len(items))
	for i, it := range items {
		p, err := normalizePeer(strings.TrimSpace(it), port)
		if err != nil {
			return nil, fmt.Errorf("host: %s entry %d: %w", what, i, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// normalizePeer checks "host:port" or "host" and returns "host:port".
func normalizePeer(s string, port int) (string, error) {
	if s == "" {
		return "", fmt.Errorf("empty address")
	}
	host, ps := s, ""
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, ps = h, p
	} else if strings.Count(s, ":") == 1 || strings.HasPrefix(s, "[") {
		return "", fmt.Errorf("%q: %v", s, err)
	}
	if host == "" {
		return "", fmt.Errorf("%q: no host", s)
	}
	if strings.ContainsAny(host, "/ \t[]") {
		return "", fmt.Errorf("%q: %q is not a host name or address", s, host)
	}
	if ps != "" {
		p, err := strconv.Atoi(ps)
		if err != nil || p < 1 || p > 65535 {
			return "", fmt.Errorf("%q: port %q is not 1..65535", s, ps)
		}
		port = p
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// maxHosts bounds hostlist expansion.
const maxHosts = 1 << 20

// ExpandHostlist expands a Slurm hostlist such as "node[01-03,7],gpu1" into
// host names ("node01", "node02", "node03", "node7", "gpu1"), keeping the
// zero padding of ranges. Several bracket groups in one name expand as a
// product.
func ExpandHostlist(s string) ([]string, error) {
	var out []string
	for _, item := range splitTopLevel(s) {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		hosts, err := expandOne(item)
		if err != nil {
			return nil, err
		}
		out = append(out, hosts...)
		if len(out) > maxHosts {
			return nil, fmt.Errorf("hostlist %q expands to more than %d hosts", s, maxHosts)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("hostlist %q names no host", s)
	}
	return out, nil
}

// splitTopLevel splits at commas outside brackets.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func expandOne(item string) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsRune(item, ']') {
			return nil, fmt.Errorf("hostlist item %q: ']' without '['", item)
		}
		return []string{item}, nil
	}
	end := strings.IndexByte(item[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("hostlist item %q: '[' without ']'", item)
	}
	end += open
	prefix, body, rest := item[:open], item[open+1:end], item[end+1:]
	if body == "" || strings.ContainsRune(body, '[') {
		return nil, fmt.Errorf("hostlist item %q: bad range %q", item, body)
	}
	tails, err := expandOne(rest)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(body, ",") {
		lo, hi, found := strings.Cut(r, "-")
		if !found {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		z, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a < 0 || z < a {
			return nil, fmt.Errorf("hostlist item %q: bad range %q", item, r)
		}
		if z-a >= maxHosts {
			return nil, fmt.Errorf("hostlist item %q: range %q too large", item, r)
		}
		width := len(lo)
		for v := a; v <= z; v++ {
			for _, t := range tails {
				out = append(out, fmt.Sprintf("%s%0*d%s", prefix, width, v, t))
				if len(out) > maxHosts {
					return nil, fmt.Errorf("hostlist item %q expands to more than %d hosts", item, maxHosts)
				}
			}
		}
	}
	return out, nil
}
