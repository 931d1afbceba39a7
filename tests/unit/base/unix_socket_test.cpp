#include "common/base/unix_socket.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace mlx5async {
namespace {

class ServerSocketPath : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/mlx5a-sock-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        path_ = dir_ + "/vhost0";
    }
    void TearDown() override {
        if (fd_ >= 0) close(fd_);
        unlink(path_.c_str());
        rmdir(dir_.c_str());
    }
    // A socket bound at path_; listening when `listen_on` (a live host),
    // else closed again at once (what a host killed with -9 leaves).
    void bind_at_path(bool listen_on) {
        fd_ = socket(AF_UNIX, SOCK_STREAM, 0);
        ASSERT_GE(fd_, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::strncpy(a.sun_path, path_.c_str(), sizeof(a.sun_path) - 1);
        ASSERT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0) << strerror(errno);
        if (listen_on) {
            ASSERT_EQ(listen(fd_, 1), 0);
        } else {
            close(fd_);
            fd_ = -1;
        }
    }
    bool exists() const {
        struct stat st {};
        return lstat(path_.c_str(), &st) == 0;
    }

    std::string dir_, path_;
    int fd_ = -1;
};

TEST_F(ServerSocketPath, NothingThereIsFree) {
    auto st = prepare_server_socket(path_);
    ASSERT_TRUE(st) << st.error().what;
    EXPECT_EQ(*st, SocketPathState::Free);
}

TEST_F(ServerSocketPath, ASocketNobodyListensOnIsRemoved) {
    bind_at_path(false);
    ASSERT_TRUE(exists());
    auto st = prepare_server_socket(path_);
    ASSERT_TRUE(st) << st.error().what;
    EXPECT_EQ(*st, SocketPathState::StaleRemoved);
    EXPECT_FALSE(exists());
}

TEST_F(ServerSocketPath, ALiveSocketIsLeftToItsOwner) {
    bind_at_path(true);
    auto st = prepare_server_socket(path_);
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().sys_errno, EADDRINUSE);
    EXPECT_NE(st.error().what.find(path_), std::string::npos) << st.error().what;
    EXPECT_NE(st.error().what.find("in use"), std::string::npos) << st.error().what;
    EXPECT_TRUE(exists());
}

TEST_F(ServerSocketPath, AFileThatIsNoSocketIsNeverReplaced) {
    std::ofstream(path_) << "data";
    auto st = prepare_server_socket(path_);
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().sys_errno, EEXIST);
    EXPECT_NE(st.error().what.find("not a socket"), std::string::npos) << st.error().what;
    EXPECT_TRUE(exists());
}

TEST_F(ServerSocketPath, APathTooLongForSockaddrUnIsRefused) {
    const std::string longer = dir_ + "/" + std::string(sizeof(sockaddr_un::sun_path), 'x');
    auto st = prepare_server_socket(longer);
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().code, Errc::InvalidArgument);
    EXPECT_NE(st.error().what.find("at most 107"), std::string::npos) << st.error().what;
}

}  // namespace
}  // namespace mlx5async
