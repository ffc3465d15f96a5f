# Every library comes from Debian's archive and is found with find_package.
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(spdlog REQUIRED)
find_package(tomlplusplus REQUIRED)
find_package(Catch2 2 REQUIRED)
find_package(Asio REQUIRED)
find_package(Libseccomp REQUIRED)
find_package(Threads REQUIRED)
