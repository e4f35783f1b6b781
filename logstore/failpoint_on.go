//go:build sluice_failpoints

package logstore

import (
	"fmt"
	"os"
	"strings"
)

// Failpoints, compiled only into a binary built with
// -tags sluice_failpoints, so that a test can SIGKILL the real broker at
// an exact step of a cleaner swap. SLUICE_FAILPOINT=cleaner.<step> names
// one step of cleaner_swap.go:
//
//	cleaner.cleaned          the *.cleaned files written and fsynced
//	cleaner.swap-partial     .index and .timeindex renamed *.swap, not the .log
//	cleaner.swap             <base>.log.swap renamed (the commit point)
//	cleaner.deleted-partial  the first replaced segment renamed *.deleted
//	cleaner.deleted          every replaced segment renamed *.deleted
//	cleaner.final-partial    the index *.swap files at their final names
//	cleaner.done             the .log at its final name, *.deleted not yet removed
//
// The first cleaning pass to reach the step writes
// "sluice failpoint reached: cleaner.<step>" to stderr and blocks forever
// (holding whatever locks the step holds), so the process stays in that
// state until it is killed. Normal builds have no failpoints: cleanHooks
// stays nil there.

// failpointMarker starts the line written when a failpoint is reached.
const failpointMarker = "sluice failpoint reached: "

func init() {
	name := os.Getenv("SLUICE_FAILPOINT")
	step, ok := strings.CutPrefix(name, "cleaner.")
	if !ok || step == "" {
		return
	}
	cleanHooks = func(s string) error {
		if s != step {
			return nil
		}
		fmt.Fprintf(os.Stderr, "%s%s\n", failpointMarker, name)
		select {} // until the process is killed
	}
}
