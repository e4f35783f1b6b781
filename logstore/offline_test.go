package logstore

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// emfileFS fails every OpenFile under one directory with EMFILE, as a
// process at its open-file limit does.
type emfileFS struct {
	FS
	under string
}

func (f emfileFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if strings.HasPrefix(name, f.under+string(filepath.Separator)) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
	}
	return f.FS.OpenFile(name, flag, perm)
}

// partitionFiles reads every file of a partition directory, by name.
func partitionFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := make(map[string]string)
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		out[strings.TrimPrefix(path, dir)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOpenFailureTakesPartitionOffline: a partition log that fails to open
// with an I/O error is reported offline (ErrLogOffline, naming the
// directory), is not retried, recreated or removed, keeps every file byte
// for byte, and opens with all its records once the fault is gone.
func TestOpenFailureTakesPartitionOffline(t *testing.T) {
	metadataIsDir := func(t *testing.T, e *testEnv) func() {
		path := filepath.Join(e.partDir(), partitionMetadataFile)
		saved, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, saved, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	tooManyOpenFiles := func(t *testing.T, e *testEnv) func() {
		e.fs = emfileFS{FS: OSFS{}, under: e.partDir()}
		return func() { e.fs = OSFS{} }
	}
	cases := []struct {
		name  string
		fault func(t *testing.T, e *testEnv) (repair func())
		crash bool
	}{
		{"partition.metadata is a directory", metadataIsDir, false},
		{"too many open files", tooManyOpenFiles, false},
		{"too many open files after a crash", tooManyOpenFiles, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			cfg := DefaultConfig()
			cfg.SegmentBytes = 3 * int64(len(simpleBatch(t, 2, 0)))
			l := e.openLog(cfg)
			for i := 0; i < 10; i++ {
				mustAppend(t, l, simpleBatch(t, 2, int64(i)), 0)
			}
			if tc.crash {
				e.crash()
			} else {
				e.close()
			}
			repair := tc.fault(t, e)
			before := partitionFiles(t, e.partDir())

			d := e.open()
			_, err := d.Open(testTP, testTopicID, cfg)
			if !errors.Is(err, ErrLogOffline) || !errors.Is(err, ErrKafkaStorage) || !strings.Contains(err.Error(), e.partDir()) {
				t.Fatalf("Open of a broken log: %v, want ErrLogOffline naming %s", err, e.partDir())
			}
			if again, err2 := d.Open(testTP, testTopicID, cfg); again != nil || err2 == nil || err2.Error() != err.Error() {
				t.Fatalf("a second Open: %v, want the first error again", err2)
			}
			if !errors.Is(d.Offline(testTP), ErrLogOffline) {
				t.Fatal("Offline does not report the partition")
			}
			if got := d.OfflinePartitions(); len(got) != 1 || got[testTP] == nil {
				t.Fatalf("OfflinePartitions = %v", got)
			}
			if err := d.Remove(testTP); !errors.Is(err, ErrLogOffline) {
				t.Fatalf("Remove of an offline partition: %v", err)
			}
			if err := d.Checkpoint(nil); err != nil {
				t.Fatal(err)
			}
			if err := d.Close(nil); err != nil {
				t.Fatal(err)
			}
			e.dir = nil
			if after := partitionFiles(t, e.partDir()); !maps.Equal(before, after) {
				t.Fatalf("offline partition's files changed: %d files before, %d after", len(before), len(after))
			}

			repair()
			d = e.open()
			if tc.crash && d.HadCleanShutdown() {
				t.Fatal("a log never recovered was marked clean at Close")
			}
			l = e.openLog(cfg)
			if l.LogEndOffset() != 20 || len(readAll(t, l, 0)) != 10 {
				t.Fatalf("after repair: log end %d", l.LogEndOffset())
			}
			e.close()
		})
	}
}
