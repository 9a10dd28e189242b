package experiments

import (
	"os"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/tcpshuffle"
)

// EnvTCPHost names the address the TCP design listens on (default
// 127.0.0.1): on a cluster, the node's IPoIB address.
const EnvTCPHost = "RDMASHUFFLE_TCP_HOST"

func init() {
	RegisterDesign(DesignSpec{Name: "TCP", Shared: false, RealOnly: true,
		About: "real TCP sockets between real hosts (the IPoIB baseline for real): explore run --backend tcp",
		Open: func(th fabric.Thread, cfg algos.Config) (algos.Endpoint, error) {
			host := os.Getenv(EnvTCPHost)
			if host == "" {
				host = "127.0.0.1"
			}
			return tcpshuffle.Open(th, cfg, host)
		}})
}
