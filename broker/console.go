package broker

// The web console (package console) on the metrics listener: built by
// newMetrics when console.enable is true, closed with the listener.

import (
	"net/http"

	"github.com/sluicedev/sluice/console"
)

// newConsole returns the console handler of this node, nil when
// console.enable is false. It dials the first PLAINTEXT Kafka listener of
// the node (a console of a cluster whose listeners all need TLS or SASL
// has no listener to use and says so on every page).
func (b *Broker) newConsole(m *brokerMetrics) *console.Console {
	if !b.cfg.ConsoleEnable {
		return nil
	}
	bootstrap := ""
	for _, l := range b.cfg.KafkaListeners() {
		if b.cfg.SecurityProtocol(l.Name) == "PLAINTEXT" {
			bootstrap = b.ListenerAddr(l.Name)
			break
		}
	}
	return console.New(console.Options{
		Bootstrap: bootstrap,
		NodeID:    b.cfg.NodeID,
		Gatherer:  m.reg,
		Ready:     func() error { return b.ready(m) },
		ReadOnly:  b.cfg.ConsoleReadOnly,
	})
}

// consoleHandler is c as the listener's handler of every other path; nil
// (404 there) without a console.
func consoleHandler(c *console.Console) http.Handler {
	if c == nil {
		return nil
	}
	return c
}
