/* A function shaped as ncclCommInitRankConfig: words, a 128-byte struct
   passed by value, then more words. It writes a hash of the struct's bytes
   through out and returns what it got as words. */
struct id {
	char internal[128];
};

struct config {
	long a, b;
};

int take_id(unsigned long *out, int nranks, struct id id, int rank, struct config *c)
{
	unsigned long h = 0;
	for (int i = 0; i < 128; i++)
		h = h * 31 + (unsigned char)id.internal[i];
	*out = h + (unsigned long)(c->a * 7 + c->b);
	return nranks * 1000 + rank;
}
