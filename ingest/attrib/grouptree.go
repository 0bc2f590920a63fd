package attrib

import "github.com/kmapindex/kmapindex/ingest/rbtree"

// linkGroup pairs the hist entries of group g's members with its
// leader's as perf report does before it shows a group
// (report__collapse_hists, util/hist.c), member by member in event
// order: hists__match searches the member's tree for each entry of the
// leader's, in the leader tree's in-order walk; then hists__link walks
// the member's tree, and each entry left without a pair searches the
// leader's tree, pairing with the entry found or, when none is, with a
// dummy entry made from it and linked where the search ended. Where the
// keys' comparison is no order (sym without dso: see histTree), those
// searches can miss an equal entry, and perf shows a member's entry on
// a line of its own; and the dummies take their place in the walk that
// orders the lines the output sort finds equal.
//
// trees and keeps are each event's tree of kept entries and, per entry,
// the one it is kept in (collapseTree). The leader's tree gains the
// dummies (and the leader a histTree, if it had none). It records in
// lineOf, for each member's row, the leader entry (plus one) whose line
// shows it.
func (rc *rowCounter) linkGroup(g eventGroup, trees map[int]*rbtree.Tree, keeps map[int][]int32, lineOf map[*row]int32) {
	lh := rc.tree(g.first)
	lt := trees[g.first]
	if lt == nil {
		_, lt = lh.collapseTree()
		trees[g.first] = lt
	}
	for m := g.first + 1; m < g.first+g.n; m++ {
		mh, mt := rc.hist[m], trees[m]
		if mh == nil || mt == nil {
			continue
		}
		paired := make([]int32, len(mh.entries))      // the leader entry plus one
		for n := lt.First(); n != nil; n = n.Next() { // hists__match
			if found, _, _ := mh.search(mt, &lh.entries[n.Value]); found >= 0 {
				paired[found] = n.Value + 1
			}
		}
		for n := mt.First(); n != nil; n = n.Next() { // hists__link
			id := n.Value
			if paired[id] != 0 {
				continue
			}
			found, parent, left := lh.search(lt, &mh.entries[id])
			if found < 0 { // hists__add_dummy_entry
				lh.entries = append(lh.entries, mh.entries[id])
				found = int32(len(lh.entries) - 1)
				lt.Link(&rbtree.Node{Value: found}, parent, left)
			}
			paired[id] = found + 1
		}
		keep := keeps[m]
		for id, hr := range mh.rows {
			if int(keep[id]) == id {
				lineOf[hr] = paired[id]
			}
		}
	}
}
