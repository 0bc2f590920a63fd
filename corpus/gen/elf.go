package gen

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
)

// koSection is one section of a module object.
type koSection struct {
	name  string
	typ   elf.SectionType
	flags elf.SectionFlag
	size  uint64
	align uint64
	off   uint64 // sh_offset in the original file
	addr  uint64 // load address relative to the module start (0: not placed)
}

// koFile returns a header-only ET_REL ELF64 file for secs: the ELF header,
// the section headers (null section, secs, .shstrtab) and the .shstrtab
// bytes. The sections' sh_offset values describe the full object, whose
// data would follow the stored bytes; the copy holds only the headers, as
// corpus ko/ files may (DESIGN.md "Corpus format").
func koFile(secs []koSection, machine elf.Machine, order binary.ByteOrder) ([]byte, error) {
	const ehdrSize, shdrSize = 64, 64
	nsec := len(secs) + 2
	if nsec >= int(elf.SHN_LORESERVE) {
		return nil, fmt.Errorf("%d sections: too many for e_shnum", nsec)
	}
	var strtab []byte
	strtab = append(strtab, 0)
	nameOff := make([]uint32, len(secs)+1)
	for i, s := range secs {
		nameOff[i] = uint32(len(strtab))
		strtab = append(append(strtab, s.name...), 0)
	}
	nameOff[len(secs)] = uint32(len(strtab))
	strtab = append(append(strtab, ".shstrtab"...), 0)

	shoff := uint64(ehdrSize)
	strOff := shoff + uint64(nsec)*shdrSize
	var data elf.Data = elf.ELFDATA2LSB
	if order.Uint16([]byte{0, 1}) == 1 {
		data = elf.ELFDATA2MSB
	}
	h := elf.Header64{
		Type:      uint16(elf.ET_REL),
		Machine:   uint16(machine),
		Version:   uint32(elf.EV_CURRENT),
		Shoff:     shoff,
		Ehsize:    ehdrSize,
		Shentsize: shdrSize,
		Shnum:     uint16(nsec),
		Shstrndx:  uint16(nsec - 1),
	}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	h.Ident[elf.EI_DATA] = byte(data)
	h.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	buf := make([]byte, 0, int(strOff)+len(strtab))
	buf, err := binary.Append(buf, order, &h)
	if err != nil {
		return nil, err
	}
	buf, err = binary.Append(buf, order, &elf.Section64{}) // SHN_UNDEF
	if err != nil {
		return nil, err
	}
	for i, s := range secs {
		buf, err = binary.Append(buf, order, &elf.Section64{
			Name: nameOff[i], Type: uint32(s.typ), Flags: uint64(s.flags),
			Off: s.off, Size: s.size, Addralign: s.align,
		})
		if err != nil {
			return nil, err
		}
	}
	buf, err = binary.Append(buf, order, &elf.Section64{
		Name: nameOff[len(secs)], Type: uint32(elf.SHT_STRTAB), Off: strOff, Size: uint64(len(strtab)), Addralign: 1,
	})
	if err != nil {
		return nil, err
	}
	return append(buf, strtab...), nil
}
