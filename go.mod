module github.com/kmapindex/kmapindex

go 1.26

require (
	github.com/google/btree v1.1.3 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
)
