//! The names file's three parts through their public API: the ELF writer
//! (`names::file`), the section finder (`names::elf`) and the id-to-name table
//! (`names::table`). Kept out of `core/src` so the core stays `no_std` under test.

/// `names::file`: the ELF image llvm-xray reads as an instrumentation map.
mod writer {
    use flightrec_core::names::file::{write, write_into, write_to, FileTooLarge, TEXT_ADDR};
    use flightrec_core::names::{elf, table, INSTR_MAP_SECTION, SECTION};

    fn names_file(max_id: u32, name_of: impl Fn(u32) -> Option<&'static [u8]>) -> Vec<u8> {
        let mut out = Vec::new();
        write_to(&mut out, max_id, name_of).unwrap();
        out
    }

    #[test]
    fn layout_is_consistent() {
        let elf = names_file(3, |id| match id {
            1 => Some(b"with \"quote\" and \0 nul"),
            3 => Some(b"plain"),
            _ => None,
        });
        let sh_off = u64::from_le_bytes(elf[40..48].try_into().unwrap()) as usize;
        assert_eq!(elf.len(), sh_off + 7 * 64);
        let strtab = elf::find_section(&elf, ".strtab").unwrap().unwrap();
        assert_eq!(strtab, b"\0with 'quote' and _ nul\0#2\0plain\0");
        let table = elf::find_section(&elf, SECTION).unwrap().unwrap();
        assert_eq!(table, b"1\twith 'quote' and _ nul\n3\tplain\n");
        assert_eq!(
            elf::find_section(&elf, ".text").unwrap().unwrap(),
            [0x90; 3]
        );
        let map = elf::find_section(&elf, INSTR_MAP_SECTION).unwrap().unwrap();
        assert_eq!(map.len(), 3 * 32);
        // Entry k's function address, PC-relative, lands on text byte k - 1.
        let map_off = map.as_ptr() as usize - elf.as_ptr() as usize;
        for k in 0..3 {
            let e = &map[k * 32..];
            let rel = u64::from_le_bytes(e[8..16].try_into().unwrap());
            let addr = (map_off + k * 32 + 8) as u64;
            assert_eq!(addr.wrapping_add(rel), TEXT_ADDR + k as u64);
            assert_eq!(&e[16..19], [0, 1, 2]);
        }
        // Symbol k names text byte k - 1 through its strtab offset.
        let symtab = elf::find_section(&elf, ".symtab").unwrap().unwrap();
        let sym = |k: usize| &symtab[24 * k..24 * (k + 1)];
        let name = |k: usize| {
            let at = u32::from_le_bytes(sym(k)[..4].try_into().unwrap()) as usize;
            strtab[at..].split(|&b| b == 0).next().unwrap()
        };
        assert_eq!(name(2), b"#2");
        assert_eq!(name(3), b"plain");
        assert_eq!(
            u64::from_le_bytes(sym(3)[8..16].try_into().unwrap()),
            TEXT_ADDR + 2
        );
    }

    #[test]
    fn no_ids_is_a_valid_file() {
        let elf = names_file(0, |_| None);
        assert_eq!(elf::find_section(&elf, SECTION), Ok(Some(&[][..])));
        assert_eq!(table::entries(&[]).count(), 0);
    }

    #[test]
    fn the_written_table_reads_back() {
        let names: [&[u8]; 4] = [b"main", b"", b"two\nlines", b"tab\there"];
        let elf = names_file(5, |id| names.get(id as usize - 1).copied());
        let section = elf::find_section(&elf, SECTION).unwrap().unwrap();
        let read: Vec<(u32, &str)> = table::entries(section)
            .map(|e| e.map(|e| (e.id, e.name)))
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            read,
            [(1, "main"), (2, ""), (3, "two\nlines"), (4, "tab\there")]
        );
    }

    #[test]
    fn every_size_short_of_the_file_is_refused_and_writing_stops() {
        let name_of = |id: u32| {
            Some(if id % 2 == 0 {
                &b"even"[..]
            } else {
                &b"odd"[..]
            })
        };
        let full = names_file(4, name_of);
        let mut buf = std::vec![0u8; full.len() + 3];
        assert_eq!(write_into(&mut buf, 4, name_of), Ok(full.len()));
        assert_eq!(&buf[..full.len()], full);
        for len in 0..full.len() {
            let mut short = std::vec![0u8; len];
            assert_eq!(
                write_into(&mut short, 4, name_of),
                Err(FileTooLarge),
                "{len}"
            );
            // The first error ends the writing: `put` is not called again.
            let (mut at, mut after_error) = (0, 0);
            let r = write(4, name_of, |b: &[u8]| {
                if at + b.len() > len {
                    after_error += 1;
                    return Err(at);
                }
                at += b.len();
                Ok(())
            });
            assert_eq!((r, after_error), (Err(at), 1), "limit {len}");
            assert_eq!(&full[..at], &buf[..at]);
        }
    }
}

/// `names::elf`: finding a section in any class and byte order.
mod sections {
    use flightrec_core::names::elf::{find_section, ElfError};

    /// `SHT_NOBITS`: a section with no bytes in the file (`.bss`).
    const NOBITS: u32 = 8;

    /// A minimal image with the given sections (name, type, bytes), in the given
    /// class and byte order; the name table is the last section.
    fn image(wide: bool, big: bool, sections: &[(&str, u32, &[u8])]) -> Vec<u8> {
        let put16 = |v: &mut Vec<u8>, x: u16| {
            v.extend(if big {
                x.to_be_bytes()
            } else {
                x.to_le_bytes()
            })
        };
        let put32 = |v: &mut Vec<u8>, x: u32| {
            v.extend(if big {
                x.to_be_bytes()
            } else {
                x.to_le_bytes()
            })
        };
        let put_word = |v: &mut Vec<u8>, x: u64| {
            if wide {
                v.extend(if big {
                    x.to_be_bytes()
                } else {
                    x.to_le_bytes()
                })
            } else {
                put32(v, x as u32)
            }
        };
        let header_size = if wide { 64 } else { 52 };
        let mut names = std::vec![0u8];
        let mut name_at = Vec::new();
        for (name, _, _) in sections.iter().copied().chain([(".shstrtab", 3, &[][..])]) {
            name_at.push(names.len() as u32);
            names.extend(name.as_bytes());
            names.push(0);
        }
        let mut data = Vec::new();
        let mut placed = Vec::new();
        for (_, _, bytes) in sections {
            placed.push((header_size + data.len()) as u64);
            data.extend(*bytes);
        }
        placed.push((header_size + data.len()) as u64);
        data.extend(&names);
        let shoff = (header_size + data.len()) as u64;
        let count = sections.len() as u16 + 2;

        let mut out = b"\x7fELF".to_vec();
        out.extend([if wide { 2 } else { 1 }, if big { 2 } else { 1 }, 1]);
        out.resize(16, 0);
        put16(&mut out, 3);
        put16(&mut out, 62);
        put32(&mut out, 1);
        put_word(&mut out, 0); // entry
        put_word(&mut out, 0); // phoff
        put_word(&mut out, shoff);
        put32(&mut out, 0); // flags
        put16(&mut out, header_size as u16);
        put16(&mut out, 0);
        put16(&mut out, 0);
        put16(&mut out, if wide { 64 } else { 40 });
        put16(&mut out, count);
        put16(&mut out, count - 1);
        assert_eq!(out.len(), header_size);
        out.extend(&data);
        let sh = |out: &mut Vec<u8>, name: u32, kind: u32, offset: u64, size: u64| {
            put32(out, name);
            put32(out, kind);
            put_word(out, 0); // flags
            put_word(out, 0); // addr
            put_word(out, offset);
            put_word(out, size);
            put32(out, 0); // link
            put32(out, 0); // info
            put_word(out, 1); // align
            put_word(out, 0); // entsize
        };
        sh(&mut out, 0, 0, 0, 0);
        for (i, (_, kind, bytes)) in sections.iter().enumerate() {
            sh(&mut out, name_at[i], *kind, placed[i], bytes.len() as u64);
        }
        sh(
            &mut out,
            name_at[sections.len()],
            3,
            placed[sections.len()],
            names.len() as u64,
        );
        out
    }

    #[test]
    fn every_class_and_byte_order() {
        for wide in [false, true] {
            for big in [false, true] {
                let img = image(
                    wide,
                    big,
                    &[
                        ("one", 1, b"first"),
                        ("two", 1, b"2\tx\n"),
                        ("bss", NOBITS, b""),
                    ],
                );
                assert_eq!(
                    find_section(&img, "two"),
                    Ok(Some(&b"2\tx\n"[..])),
                    "wide {wide} big {big}"
                );
                assert_eq!(find_section(&img, "one"), Ok(Some(&b"first"[..])));
                assert_eq!(find_section(&img, "bss"), Ok(Some(&[][..])));
                assert_eq!(find_section(&img, "on"), Ok(None));
                assert_eq!(
                    find_section(&img, ""),
                    Ok(Some(&[][..])),
                    "section 0 has the empty name"
                );
                for len in 0..img.len() {
                    assert!(find_section(&img[..len], "two").is_err(), "cut at {len}");
                }
            }
        }
    }

    #[test]
    fn bad_headers_are_errors() {
        let good = image(true, false, &[("two", 1, b"x")]);
        let mut bad = good.clone();
        bad[4] = 3;
        assert_eq!(find_section(&bad, "two"), Err(ElfError::UnknownClass(3)));
        let mut bad = good.clone();
        bad[5] = 0;
        assert_eq!(
            find_section(&bad, "two"),
            Err(ElfError::UnknownByteOrder(0))
        );
        let mut bad = good.clone();
        bad[0x3a] = 8; // entries too small
        assert_eq!(
            find_section(&bad, "two"),
            Err(ElfError::SectionHeadersOutOfBounds)
        );
        let mut bad = good.clone();
        bad[0x3e] = 9; // name table index past the end
        assert_eq!(
            find_section(&bad, "two"),
            Err(ElfError::SectionNamesOutOfBounds)
        );
        let mut bad = good.clone();
        let shoff = u64::from_le_bytes(bad[0x28..0x30].try_into().unwrap()) as usize;
        bad[shoff + 64] = 200; // section 1's name offset
        assert_eq!(
            find_section(&bad, "two"),
            Err(ElfError::SectionNameOutOfBounds { section: 1 })
        );
        let mut bad = good.clone();
        bad[shoff + 64 + 0x20 + 7] = 1; // section 1's size: huge
        assert_eq!(
            find_section(&bad, "two"),
            Err(ElfError::SectionOutOfBounds { section: 1 })
        );
        let mut none = good.clone();
        none[0x28..0x30].fill(0); // no section headers at all
        assert_eq!(find_section(&none, "two"), Ok(None));
    }

    #[test]
    fn extended_numbering() {
        let mut img = image(false, true, &[("two", 1, b"x")]);
        let shoff = u32::from_be_bytes(img[0x20..0x24].try_into().unwrap()) as usize;
        img[0x30..0x32].fill(0); // count 0: in section 0's size
        img[0x32..0x34].fill(0xff); // SHN_XINDEX: in section 0's link
        img[shoff + 0x14..shoff + 0x18].copy_from_slice(&3u32.to_be_bytes());
        img[shoff + 0x18..shoff + 0x1c].copy_from_slice(&2u32.to_be_bytes());
        assert_eq!(find_section(&img, "two"), Ok(Some(&b"x"[..])));
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bodies_never_panic(class in 0u8..4, data in 0u8..4, body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..1024)) {
            let mut bytes = std::vec![0x7f, b'E', b'L', b'F', class, data, 1, 0];
            bytes.extend_from_slice(&body);
            let _ = find_section(&bytes, "flightrec_names");
        }
    }
}

/// `names::table`: the `id<TAB>name` lines.
mod lines {
    use flightrec_core::names::table::{
        encode_entry, entries, entry_len, write_entry, BufferTooSmall, TableError, TableErrorKind,
    };

    fn read(table: &[u8]) -> Result<Vec<(u32, &str)>, TableError> {
        entries(table).map(|e| e.map(|e| (e.id, e.name))).collect()
    }

    fn kind(table: &[u8]) -> (usize, TableErrorKind) {
        let e = read(table).unwrap_err();
        (e.line, e.kind)
    }

    #[test]
    fn lines_are_checked() {
        use TableErrorKind::*;
        assert_eq!(read(b"").unwrap(), []);
        assert_eq!(read(b"\n").unwrap(), []);
        assert_eq!(read(b"7\tx").unwrap(), [(7, "x")]);
        assert_eq!(
            read(b"1\ta\n2\t\n3\tb\n\nc\n").unwrap(),
            [(1, "a"), (2, ""), (3, "b\n\nc")]
        );
        assert_eq!(read(b"1\ta\tb\n").unwrap(), [(1, "a\tb")]);
        assert_eq!(read(b"1\ta\n1\tb\n").unwrap(), [(1, "a"), (1, "b")]);
        assert_eq!(kind(b"zz\n1\ta\n"), (1, NoTab));
        assert_eq!(kind(b"\n\n"), (1, NoTab));
        assert_eq!(kind(b"-1\ta\n"), (1, IdNotDecimal));
        assert_eq!(kind(b"\ta\n"), (1, IdNotDecimal));
        assert_eq!(kind(b"1\ta\n+2\tb\n"), (2, IdNotDecimal));
        assert_eq!(kind(b"0\ta\n"), (1, IdOutOfRange));
        assert_eq!(kind(b"4294967296\ta\n"), (1, IdOutOfRange));
        assert_eq!(read(b"4294967295\ta\n").unwrap(), [(u32::MAX, "a")]);
        assert_eq!(kind(b"1\t\xff\n"), (1, NameNotUtf8));
        assert_eq!(kind(b"1\ta\n\xff\n"), (2, NameNotUtf8));
        assert_eq!(kind(b"1\ta\nb\n2\tc\nd\n\xff\n"), (5, NameNotUtf8));
    }

    #[test]
    fn entries_know_their_lines_and_stop_after_an_error() {
        let lines: Vec<usize> = entries(b"1\ta\nb\nc\n2\td\n3\te")
            .map(|e| e.unwrap().line)
            .collect();
        assert_eq!(lines, [1, 4, 5]);
        let mut it = entries(b"1\ta\nx\t\n2\tb\n");
        assert!(it.next().unwrap().is_ok());
        assert!(it.next().unwrap().is_err());
        assert!(it.next().is_none());
    }

    #[test]
    fn emitted_lines_read_back() {
        let names: [(u32, &str); 5] = [
            (1, "main"),
            (9, ""),
            (10, "two\nlines"),
            (4_000_000_000, "tab\there"),
            (12, "ünïcode"),
        ];
        let mut out = Vec::new();
        for (id, name) in names {
            write_entry(&mut out, id, name.as_bytes()).unwrap();
            let mut buf = [0u8; 64];
            let n = encode_entry(id, name.as_bytes(), &mut buf).unwrap();
            assert_eq!(n, entry_len(id, name.as_bytes()));
            assert!(out.ends_with(&buf[..n]));
        }
        assert_eq!(read(&out).unwrap(), names);
    }

    #[test]
    fn a_short_buffer_is_untouched() {
        let mut buf = [0xAAu8; 6];
        assert_eq!(
            encode_entry(100, b"abc", &mut buf),
            Err(BufferTooSmall { needed: 8 })
        );
        assert_eq!(buf, [0xAA; 6]);
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_read_without_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256)) {
            for e in entries(&bytes).flatten() {
                proptest::prop_assert!(e.id > 0);
            }
        }

        #[test]
        fn tab_free_names_round_trip(names in proptest::collection::vec((1u32.., "[^\t\n]{0,12}"), 0..8)) {
            let mut out = Vec::new();
            for (id, name) in &names {
                write_entry(&mut out, *id, name.as_bytes()).unwrap();
            }
            let back: Vec<(u32, String)> = entries(&out).map(|e| e.map(|e| (e.id, e.name.into()))).collect::<Result<_, _>>().unwrap();
            proptest::prop_assert_eq!(back, names);
        }
    }
}
