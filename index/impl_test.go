package index_test

import (
	"github.com/kmapindex/kmapindex/index"
	"github.com/kmapindex/kmapindex/index/listref"
)

// impl is what the B-tree and the list reference have in common, so every
// table test runs on both.
type impl interface {
	Insert(index.Map) error
	FixupOverlapAndInsert(index.Map) error
	MergeIn(index.Map) error
	Remove(index.Map) bool
	RemoveFunc(func(index.Map) bool) int
	Find(uint64) (index.Map, bool)
	Slice() []index.Map
	Len() int
	Canonical() string
}

type implCase struct {
	name      string
	new       func() impl
	loadKcore func(impl, []index.Segment, index.Landmarks) (index.Map, error)
}

var impls = []implCase{
	{
		name: "btree",
		new:  func() impl { return index.New() },
		loadKcore: func(ms impl, s []index.Segment, lm index.Landmarks) (index.Map, error) {
			return index.LoadKcore(ms.(*index.Maps), s, lm)
		},
	},
	{
		name: "list",
		new:  func() impl { return &listref.Maps{} },
		loadKcore: func(ms impl, s []index.Segment, lm index.Landmarks) (index.Map, error) {
			return listref.LoadKcore(ms.(*listref.Maps), s, lm)
		},
	},
}
