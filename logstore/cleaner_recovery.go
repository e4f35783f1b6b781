package logstore

import (
	"path/filepath"
	"sort"
	"strings"
)

// recoverCleanerFiles finishes or undoes a cleaner swap interrupted by a
// crash (see cleaner_swap.go), before the partition directory is read:
//
//   - *.cleaned files belong to a pass that had not committed: deleted;
//   - a <base>.log.swap committed a cleaned segment: its index *.swap files
//     are renamed over their final names, every segment whose base is in
//     [base, the swap's next offset) is deleted (the one at base is
//     replaced by the rename), and the .log.swap is renamed <base>.log;
//   - index *.swap files without a .log.swap belong to a swap whose .log
//     was already renamed (they were renamed before it, so none are left)
//     or that never committed: deleted.
func recoverCleanerFiles(fsys FS, path string) error {
	entries, err := fsys.ReadDir(path)
	if err != nil {
		return err
	}
	var swaps []int64
	var strays []string
	logs := map[int64]bool{}
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, cleanedSuffix):
			if err := fsys.Remove(filepath.Join(path, name)); err != nil && !isNotExist(err) {
				return err
			}
		case strings.HasSuffix(name, logSuffix+swapSuffix):
			if base, ok := parseSegmentName(strings.TrimSuffix(name, logSuffix+swapSuffix)); ok {
				swaps = append(swaps, base)
			}
		case strings.HasSuffix(name, swapSuffix):
			strays = append(strays, name)
		case strings.HasSuffix(name, logSuffix):
			if base, ok := parseSegmentName(strings.TrimSuffix(name, logSuffix)); ok {
				logs[base] = true
			}
		}
	}
	sort.Slice(swaps, func(i, j int) bool { return swaps[i] < swaps[j] })
	isSwapped := map[int64]bool{}
	for _, b := range swaps {
		isSwapped[b] = true
	}
	for _, name := range strays {
		stem := name[:min(20, len(name))]
		if base, ok := parseSegmentName(stem); ok && isSwapped[base] {
			continue
		}
		if err := fsys.Remove(filepath.Join(path, name)); err != nil && !isNotExist(err) {
			return err
		}
	}
	for _, base := range swaps {
		name := filepath.Join(path, segmentName(base))
		next, err := swapNextOffset(fsys, name+logSuffix+swapSuffix, base)
		if err != nil {
			return err
		}
		for _, suf := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			if err := fsys.Rename(name+suf+swapSuffix, name+suf); err != nil && !isNotExist(err) {
				return err
			}
		}
		for old := range logs {
			if old <= base || old >= next || isSwapped[old] {
				continue
			}
			oldName := filepath.Join(path, segmentName(old))
			for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
				if err := fsys.Remove(oldName + suf); err != nil && !isNotExist(err) {
					return err
				}
			}
			delete(logs, old)
		}
		if err := fsys.Rename(name+logSuffix+swapSuffix, name+logSuffix); err != nil {
			return err
		}
		logs[base] = true
	}
	if len(swaps) > 0 {
		return syncDir(fsys, path)
	}
	return nil
}

// swapNextOffset reads the batch headers of a .log.swap file and returns
// the offset after its last batch (base for an empty file). The file was
// fsynced before it was named .swap, so a bad header only ends the scan.
func swapNextOffset(fsys FS, name string, base int64) (int64, error) {
	data, err := readWholeFile(fsys, name)
	if err != nil {
		return 0, err
	}
	next := base
	for len(data) >= batchHeaderSize {
		h := parseHeader(data)
		if h.Length < minBatchLength || h.size() > int64(len(data)) {
			break
		}
		next = h.nextOffset()
		data = data[h.size():]
	}
	return next, nil
}
