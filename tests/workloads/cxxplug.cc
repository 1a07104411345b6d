/*
 * cxxplug.cc - the C++ plugin that dlplug.c loads: it calls back into the
 * C program under try/catch, and throws when asked, so that an exception
 * passes through the C program's frame in between.
 */
#include <stdexcept>

extern "C" int plugin_call(int (*cb)(int), int i)
{
	try {
		return cb(i);
	} catch (const std::exception &) {
		return -1;
	}
}

extern "C" void plugin_throw(int i)
{
	if (i % 2)
		throw std::runtime_error("thrown from the plugin");
}
