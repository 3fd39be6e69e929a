#include <map>
#include <string>
#include <algorithm>
#include <vector>
struct Key { int a; };
int main() {
    std::map<Key, std::string> m;
    m[Key{1}] = "x";
    std::vector<Key> v(3);
    std::sort(v.begin(), v.end());
    return 0;
}
