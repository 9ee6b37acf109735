/*
 * true: the trivial program whose fork+exec+wait is the spawn floor.  It is
 * linked statically, so the floor holds no dynamic loading: what a command
 * costs above it is its own.
 */
int
main(void)
{
	return 0;
}
