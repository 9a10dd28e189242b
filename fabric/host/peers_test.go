package host

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func noFile(string) ([]byte, error) { return nil, os.ErrNotExist }

func TestBootstrapSources(t *testing.T) {
	files := func(name string) ([]byte, error) {
		if name == "/etc/peers" {
			return []byte("# job 17\nhostA:9000\nhostB   # second\n\n[fe80::1]:7000\n"), nil
		}
		return nil, os.ErrNotExist
	}
	for _, tc := range []struct {
		name string
		env  func(string) string
		want Bootstrap
	}{
		{"explicit", envOf(EnvRank, "1", EnvPeers, "a:1000, b:1001,c"),
			Bootstrap{Rank: 1, Size: 3, Coordinator: "a:1000", Peers: []string{"a:1000", "b:1001", "c:17219"}}},
		{"file", envOf(EnvRank, "2", EnvPeersFile, "/etc/peers", EnvPort, "5000"),
			Bootstrap{Rank: 2, Size: 3, Coordinator: "hostA:9000", Peers: []string{"hostA:9000", "hostB:5000", "[fe80::1]:7000"}}},
		{"slurm", envOf("SLURM_PROCID", "5", "SLURM_NTASKS", "8", "SLURM_STEP_NODELIST", "cn[007-010],gpu1"),
			Bootstrap{Rank: 5, Size: 8, Coordinator: "cn007:17219"}},
		{"slurm job nodelist", envOf("SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_JOB_NODELIST", "x1,x2", EnvPort, "4000"),
			Bootstrap{Rank: 0, Size: 2, Coordinator: "x1:4000"}},
		{"openmpi", envOf("OMPI_COMM_WORLD_RANK", "3", "OMPI_COMM_WORLD_SIZE", "4", EnvCoordinator, "head:6000"),
			Bootstrap{Rank: 3, Size: 4, Coordinator: "head:6000"}},
		{"pmi", envOf("PMI_RANK", "0", "PMI_SIZE", "1", EnvCoordinator, "head"),
			Bootstrap{Rank: 0, Size: 1, Coordinator: "head:17219"}},
		{"rank var wins over slurm", envOf(EnvRank, "1", "SLURM_PROCID", "0", "SLURM_NTASKS", "2", EnvPeers, "a,b"),
			Bootstrap{Rank: 1, Size: 2, Coordinator: "a:17219", Peers: []string{"a:17219", "b:17219"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := bootstrapFrom(tc.env, files)
			if err != nil {
				t.Fatal(err)
			}
			got.Source = ""
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestBootstrapErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  func(string) string
		want string
	}{
		{"no rank", envOf(EnvPeers, "a,b"), "cannot tell this process's rank"},
		{"bad rank", envOf(EnvRank, "x", EnvPeers, "a,b"), `RDMASHUFFLE_RANK="x" is not a rank`},
		{"rank too large", envOf(EnvRank, "2", EnvPeers, "a,b"), "rank 2 (from RDMASHUFFLE_RANK) outside 0..1"},
		{"no size", envOf(EnvRank, "0", EnvCoordinator, "h"), "cannot tell the number of nodes"},
		{"size too large", envOf(EnvRank, "0", EnvSize, "2147483648", EnvCoordinator, "h"), "RDMASHUFFLE_SIZE=2147483648: more than 32768 nodes"},
		{"size disagrees", envOf("SLURM_PROCID", "0", "SLURM_NTASKS", "4", EnvPeers, "a,b"), "names 2 nodes but SLURM_NTASKS=4"},
		{"no coordinator", envOf(EnvRank, "0", EnvSize, "2"), "cannot tell where node 0 listens"},
		{"bad port var", envOf(EnvRank, "0", EnvPeers, "a", EnvPort, "70000"), "RDMASHUFFLE_PORT"},
		{"bad peer", envOf(EnvRank, "0", EnvPeers, "a,b:http"), `entry 1: "b:http": port "http"`},
		{"empty peer", envOf(EnvRank, "0", EnvPeers, "a,,b"), "entry 1: empty address"},
		{"missing file", envOf(EnvRank, "0", EnvPeersFile, "/nope"), "RDMASHUFFLE_PEERS_FILE"},
		{"bad nodelist", envOf("SLURM_PROCID", "0", "SLURM_NTASKS", "2", "SLURM_STEP_NODELIST", "cn[3-1]"), "bad range"},
		{"bad coordinator", envOf(EnvRank, "0", EnvSize, "2", EnvCoordinator, "h:0"), "RDMASHUFFLE_COORDINATOR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bootstrapFrom(tc.env, noFile)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestParsePeersMalformed(t *testing.T) {
	for text, want := range map[string]string{
		"":                      "lists no nodes",
		"# only a comment\n\n":  "lists no nodes",
		"a:1\nb c\n":            "line 2",
		"a:1\n:80\n":            `line 2: ":80": no host`,
		"a:99999\n":             "line 1",
		"a:1,b:2\n":             "one host[:port] per line",
		"a:1\n[::1\n":           "line 2",
		"a:1\nhost/24\n":        "line 2",
		"a:1\n\n\n  x:y:z:w]\n": "line 4",
	} {
		_, err := ParsePeers(text, 1)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePeers(%q) = %v, want an error containing %q", text, err, want)
		}
	}
	got, err := ParsePeers("a\n::1\n10.0.0.1:5\n", 7)
	if err != nil || !reflect.DeepEqual(got, []string{"a:7", "[::1]:7", "10.0.0.1:5"}) {
		t.Fatalf("ParsePeers: %v %v", got, err)
	}
}

func TestExpandHostlist(t *testing.T) {
	for in, want := range map[string][]string{
		"a":                   {"a"},
		"n[1-3]":              {"n1", "n2", "n3"},
		"n[08-11],x":          {"n08", "n09", "n10", "n11", "x"},
		"r[1-2]-n[1,3]":       {"r1-n1", "r1-n3", "r2-n1", "r2-n3"},
		"gpu[001-002,010],cn": {"gpu001", "gpu002", "gpu010", "cn"},
	} {
		got, err := ExpandHostlist(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ExpandHostlist(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", ",", "n[1-", "n]", "n[]", "n[a-b]", "n[3-1]", "n[0-99999999]", "n[[1]]"} {
		if _, err := ExpandHostlist(in); err == nil {
			t.Errorf("ExpandHostlist(%q) accepted", in)
		}
	}
	if _, err := ExpandHostlist("a[0-9999]-b[0-9999]"); err == nil {
		t.Error("a 10^8-host product was expanded")
	}
}

func TestBootstrapName(t *testing.T) {
	b := Bootstrap{Coordinator: "h0:1", Peers: []string{"h0:1", "h1:1"}}
	if b.Name(1) != "node 1 (h1:1)" || b.Name(5) != "node 5" {
		t.Error(b.Name(1), b.Name(5))
	}
	if (Bootstrap{Coordinator: "c:2"}).Name(0) != "node 0 (c:2)" {
		t.Error("coordinator name")
	}
}

// TestLauncherPrecedence: the innermost launcher's rank and size win, so
// that mpirun inside a Slurm allocation (SLURM_PROCID set for the batch
// step) gives every process its own rank.
func TestLauncherPrecedence(t *testing.T) {
	for _, tc := range []struct {
		name       string
		env        map[string]string
		rank, size int
		source     string
	}{
		{"srun", map[string]string{"SLURM_PROCID": "3", "SLURM_NTASKS": "8"}, 3, 8, "SLURM_PROCID"},
		{"mpirun inside a Slurm allocation", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "6"}, 5, 6, "OMPI_COMM_WORLD_RANK"},
		{"MPICH hydra inside Slurm", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "PMI_RANK": "2", "PMI_SIZE": "4"}, 2, 4, "PMI_RANK"},
		{"srun --mpi=pmix", map[string]string{"SLURM_PROCID": "7", "SLURM_NTASKS": "16", "PMIX_RANK": "7"}, 7, 16, "PMIX_RANK"},
		{"prterun with PMIx and Open MPI", map[string]string{"PMIX_RANK": "1", "OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"}, 1, 2, "OMPI_COMM_WORLD_RANK"},
		{"explore launch inside Slurm", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "1", EnvRank: "3", EnvSize: "4"}, 3, 4, EnvRank},
	} {
		env := map[string]string{EnvCoordinator: "node0:7000"}
		for k, v := range tc.env {
			env[k] = v
		}
		b, err := bootstrapFrom(func(k string) string { return env[k] }, nil)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if b.Rank != tc.rank || b.Size != tc.size || !strings.HasPrefix(b.Source, tc.source) {
			t.Errorf("%s: rank %d of %d from %q, want %d of %d from %s", tc.name, b.Rank, b.Size, b.Source, tc.rank, tc.size, tc.source)
		}
	}
}

// TestBootstrapJobAndPort: the job's identity comes from RDMASHUFFLE_JOB or
// the launcher that gave the rank (never an outer one, which other jobs
// share or whose steps differ between nodes), and the port from
// RDMASHUFFLE_PORT or the ports Slurm reserved for the step.
func TestBootstrapJobAndPort(t *testing.T) {
	slurm := []string{"SLURM_PROCID", "1", "SLURM_NTASKS", "4", "SLURM_STEP_NODELIST", "cn[1-4]", "SLURM_JOB_ID", "4711", "SLURM_STEP_ID", "2"}
	with := func(base []string, kv ...string) func(string) string {
		return envOf(append(append([]string(nil), base...), kv...)...)
	}
	for _, tc := range []struct {
		name  string
		env   func(string) string
		job   string
		coord string
	}{
		{"srun", with(slurm), "slurm/4711.2", "cn1:17219"},
		{"srun, the old step variable", with(slurm, "SLURM_STEP_ID", "", "SLURM_STEPID", "3"), "slurm/4711.3", "cn1:17219"},
		{"srun --resv-ports", with(slurm, "SLURM_STEP_RESV_PORTS", "12000-12003"), "slurm/4711.2", "cn1:12000"},
		{"srun, one reserved port", with(slurm, "SLURM_STEP_RESV_PORTS", "12007"), "slurm/4711.2", "cn1:12007"},
		{"RDMASHUFFLE_PORT wins", with(slurm, "SLURM_STEP_RESV_PORTS", "12000-12003", EnvPort, "9000"), "slurm/4711.2", "cn1:9000"},
		{"RDMASHUFFLE_JOB wins", with(slurm, EnvJob, "nonce-1"), "nonce-1", "cn1:17219"},
		{"mpirun inside Slurm: not Slurm's job or ports", with(slurm, "SLURM_STEP_RESV_PORTS", "12000", "OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "4", "OMPI_MCA_ess_base_jobid", "123", EnvCoordinator, "head"), "ompi/123", "head:17219"},
		{"Open MPI 5 (PRRTE)", envOf("OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2", "PMIX_RANK", "0", "PMIX_NAMESPACE", "prterun-h-77@1", EnvCoordinator, "h"), "pmix/prterun-h-77@1", "h:17219"},
		{"srun --mpi=pmix", with(slurm, "PMIX_RANK", "1", "PMIX_NAMESPACE", "slurm.pmix.4711.2"), "pmix/slurm.pmix.4711.2", "cn1:17219"},
		{"MPICH: none", with(slurm, "PMI_RANK", "1", "PMI_SIZE", "4"), "", "cn1:17219"},
		{"explore launch", envOf(EnvRank, "1", EnvSize, "2", EnvCoordinator, "127.0.0.1:4000", EnvJob, "launch-99-ab"), "launch-99-ab", "127.0.0.1:4000"},
		{"by hand", envOf(EnvRank, "1", EnvSize, "2", EnvCoordinator, "h"), "", "h:17219"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := bootstrapFrom(tc.env, noFile)
			if err != nil {
				t.Fatal(err)
			}
			if b.Job != tc.job || b.Coordinator != tc.coord {
				t.Errorf("job %q, coordinator %s; want %q, %s (from %s)", b.Job, b.Coordinator, tc.job, tc.coord, b.Source)
			}
		})
	}
	if _, err := bootstrapFrom(with(slurm, "SLURM_STEP_RESV_PORTS", "none"), noFile); err == nil || !strings.Contains(err.Error(), `SLURM_STEP_RESV_PORTS="none" is not a TCP port`) {
		t.Errorf("a bad reserved port: %v", err)
	}
}
