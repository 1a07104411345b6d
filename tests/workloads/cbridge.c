/*
 * cbridge.c - libcbridge.so, a C library that hands its calls on to the
 * C++ plugin libcxxplug.so (which it needs, and which needs libstdc++):
 * linkplug.c links it, so the C++ runtime is two levels below a C program.
 */
int plugin_call(int (*cb)(int), int i);
void plugin_throw(int i);

int bridge_call(int (*cb)(int), int i)
{
	return plugin_call(cb, i);
}

void bridge_throw(int i)
{
	plugin_throw(i);
}
