package sensitivity

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// ModelID identifies the model's numbers: every built-in profile's
// parameters (sim.Profile.Hash) and the baselines' and designs' cost
// constants in package algos. An analysis made on other numbers does not
// describe this model's verdicts. A change of mechanism in the simulator
// code that keeps every number is not seen; the golden records are the
// check for those.
func ModelID() string {
	h := sha256.New()
	for _, name := range sim.BuiltinProfiles() {
		p, err := sim.LoadProfile(name)
		if err != nil {
			fmt.Fprintf(h, "%s: %v\n", name, err)
			continue
		}
		fmt.Fprintf(h, "%s=%s\n", name, p.Hash())
	}
	fmt.Fprintf(h, "ipoib %+v\nmpi %+v\npoll %d\n", algos.DefaultIPoIBCosts, algos.DefaultMPICosts, algos.DefaultPollLineCycles)
	return hex.EncodeToString(h.Sum(nil)[:8])
}
