/* Unit tests of srun's --mpi as its command line holds it (common/srunargs.c). */
#include <string.h>

#include "common/srunargs.h"
#include "tap.h"

/* words: srun's argv with '|' between the words (each becomes a NUL). */
static const char *mpi_of(const char *words)
{
	static char cmd[512], out[64];
	size_t n = strlen(words);

	memcpy(cmd, words, n + 1);
	for (size_t i = 0; i < n; i++)
		if (cmd[i] == '|')
			cmd[i] = '\0';
	if (!dlrt_srunargs_mpi(cmd, n + 1, out, sizeof(out)))
		return "(none)";
	return out;
}

int main(void)
{
	TAP_IS_STR(mpi_of("srun|--het-group=0,1|--mpi=pmix|prog"), "pmix", "--mpi=V");
	TAP_IS_STR(mpi_of("srun|--mpi|none|-n|4|prog|--mpi=pmix"), "none",
		   "--mpi V; the program's own words after it are not srun's");
	TAP_IS_STR(mpi_of("srun|--mpi=none|--mpi=pmix_v4|prog"), "pmix_v4", "the last one wins");
	TAP_IS_STR(mpi_of("srun|--het-group=0,1|prog|--mpi=pmix"), "(none)",
		   "a --mpi of the program is not srun's");
	TAP_IS_STR(mpi_of("srun|-n|2|:|--mpi=pmix|prog"), "(none)",
		   "nothing after the first ':' (Slurm takes --mpi from the first component)");
	TAP_IS_STR(mpi_of("srun|--|--mpi=pmix"), "(none)", "nothing after --");
	TAP_IS_STR(mpi_of("srun"), "(none)", "srun alone");
	TAP_IS_STR(mpi_of("srun|--mpi"), "(none)", "--mpi without its value");
	TAP_IS_STR(mpi_of("srun|-N1|--mpi=|prog"), "", "an empty value is empty");
	/* No NUL at the end (a command line cut at the buffer's size). */
	{
		char out[8];

		TAP_OK(dlrt_srunargs_mpi("srun\0--mpi=pmix_v5", 18, out, sizeof(out)) &&
			       !strcmp(out, "pmix_v5"), "a last word without its NUL");
		TAP_OK(dlrt_srunargs_mpi("srun\0--mpi=pmix_v5x", 19, out, 4) && !strcmp(out, "pmi"),
		       "a value cut to the room given");
	}
	return tap_done();
}
