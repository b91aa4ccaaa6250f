// The one translation unit that compiles Boost.Asio and Boost.Beast (api/CMakeLists.txt defines
// BOOST_ASIO_SEPARATE_COMPILATION and BOOST_BEAST_SEPARATE_COMPILATION for every user of the api
// target, so no other file instantiates their non-template code again).
#include <boost/asio/impl/src.hpp>
#include <boost/beast/src.hpp>
