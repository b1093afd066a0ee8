#include "elfneeds.h"

#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* `off`+`n` bytes lie inside the image. */
static bool inside(size_t len, uint64_t off, uint64_t n)
{
	return off <= len && n <= len - off;
}

/* Maps a virtual address to a file offset through the PT_LOAD segments. */
static bool vaddr_to_off(const uint8_t *img, size_t len, const Elf64_Ehdr *eh, uint64_t vaddr,
			 uint64_t *off)
{
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, img + eh->e_phoff + (uint64_t)i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_LOAD || vaddr < ph.p_vaddr || vaddr - ph.p_vaddr >= ph.p_filesz)
			continue;
		*off = ph.p_offset + (vaddr - ph.p_vaddr);
		return *off < len;
	}
	return false;
}

int dlrt_elf_needs(const uint8_t *img, size_t len, void (*need)(const char *name, void *arg),
		   void *arg)
{
	Elf64_Ehdr eh;
	uint64_t dyn_off = 0, dyn_size = 0, strtab = 0, strsz = 0, str_off;
	bool have_dyn = false, have_strtab = false;
	int n = 0;

	if (len < sizeof(eh))
		return -1;
	memcpy(&eh, img, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    !inside(len, eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr)))
		return -1;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		memcpy(&ph, img + eh.e_phoff + (uint64_t)i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_DYNAMIC) {
			dyn_off = ph.p_offset;
			dyn_size = ph.p_filesz;
			have_dyn = true;
		}
	}
	if (!have_dyn)
		return 0; /* static: no libraries */
	if (!inside(len, dyn_off, dyn_size))
		return -1;
	for (uint64_t o = 0; o + sizeof(Elf64_Dyn) <= dyn_size; o += sizeof(Elf64_Dyn)) {
		Elf64_Dyn d;

		memcpy(&d, img + dyn_off + o, sizeof(d));
		if (d.d_tag == DT_NULL)
			break;
		if (d.d_tag == DT_STRTAB) {
			strtab = d.d_un.d_ptr;
			have_strtab = true;
		} else if (d.d_tag == DT_STRSZ) {
			strsz = d.d_un.d_val;
		}
	}
	if (!have_strtab || !vaddr_to_off(img, len, &eh, strtab, &str_off))
		return -1;
	if (!inside(len, str_off, strsz))
		strsz = len - str_off;
	for (uint64_t o = 0; o + sizeof(Elf64_Dyn) <= dyn_size; o += sizeof(Elf64_Dyn)) {
		Elf64_Dyn d;
		const char *s;

		memcpy(&d, img + dyn_off + o, sizeof(d));
		if (d.d_tag == DT_NULL)
			break;
		if (d.d_tag != DT_NEEDED)
			continue;
		if (d.d_un.d_val >= strsz)
			return -1;
		s = (const char *)img + str_off + d.d_un.d_val;
		if (!memchr(s, '\0', strsz - d.d_un.d_val))
			return -1;
		need(s, arg);
		n++;
	}
	return n;
}

bool dlrt_lib_is_mpi(const char *name)
{
	static const char *const prefixes[] = { "libmpi", "libpmi", "libopen-rte", "libopen-pal" };

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(*prefixes); i++)
		if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
			return true; /* libmpi*, libmpich*, libpmi*, libpmix* */
	return false;
}

static void note_mpi(const char *name, void *arg)
{
	if (dlrt_lib_is_mpi(name))
		*(bool *)arg = true;
}

bool dlrt_program_uses_mpi(const char *path)
{
	struct stat st;
	bool mpi = false;
	void *img;
	/* The path is the user's: a FIFO must not block the open (nor a
	 * terminal become ours), and only a regular file of bounded size is
	 * read. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return false;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr) ||
	    st.st_size > (off_t)DLRT_ELF_MAX_BYTES) {
		close(fd);
		return false;
	}
	img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (img == MAP_FAILED)
		return false;
	dlrt_elf_needs(img, (size_t)st.st_size, note_mpi, &mpi);
	munmap(img, (size_t)st.st_size);
	return mpi;
}
