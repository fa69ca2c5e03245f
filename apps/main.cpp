#include <cstdio>
int main() { std::puts("streamline"); return 0; }
