package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// resetPeak resets the process's peak RSS (VmHWM) to its current RSS, as
// writing 5 to /proc/<pid>/clear_refs does (Linux 4.0 on).
func (p *proc) resetPeak() error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.pid()), []byte("5"), 0)
}

// rssSample is one reading of a process's resident memory, in bytes:
// VmRSS and its anonymous and file-backed parts (RssAnon, RssFile; a
// JVM's heap and a Go heap are anonymous, mapped index files are not).
type rssSample struct{ rss, anon, file int64 }

// readRSS reads p's resident memory from /proc/<pid>/status.
func (p *proc) readRSS() (rssSample, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid()))
	if err != nil {
		return rssSample{}, err
	}
	var s rssSample
	for _, line := range strings.Split(string(data), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var to *int64
		switch key {
		case "VmRSS":
			to = &s.rss
		case "RssAnon":
			to = &s.anon
		case "RssFile":
			to = &s.file
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			return rssSample{}, fmt.Errorf("%s: %q: %w", key, val, err)
		}
		*to = kb << 10
	}
	if s.rss == 0 {
		return rssSample{}, errors.New("no VmRSS in /proc status")
	}
	return s, nil
}

// rssSampler keeps the reading with the largest VmRSS of a process it
// samples.
type rssSampler struct {
	done chan struct{}
	wg   sync.WaitGroup
	peak rssSample
}

// startRSSSampler samples p's memory every interval until stop.
func startRSSSampler(p *proc, interval time.Duration) *rssSampler {
	s := &rssSampler{done: make(chan struct{})}
	s.wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if m, err := p.readRSS(); err == nil && m.rss > s.peak.rss {
				s.peak = m
			}
			select {
			case <-s.done:
				return
			case <-t.C:
			}
		}
	})
	return s
}

// stop ends the sampling and returns the reading with the largest VmRSS.
func (s *rssSampler) stop() rssSample {
	close(s.done)
	s.wg.Wait()
	return s.peak
}
