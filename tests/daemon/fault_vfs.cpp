#include "fault_vfs.h"

#include <signal.h>
#include <sqlite3.h>

#include <atomic>
#include <cstdlib>

namespace trainingd::daemon {
namespace {

constexpr char kName[] = "trainingd-fault";

std::atomic<int> g_fault{static_cast<int>(FaultVfs::Fault::kNone)};
std::atomic<int64_t> g_countdown{0};  // calls that still succeed before the fault starts
std::atomic<int64_t> g_failures{0};
sqlite3_vfs* g_root = nullptr;  // the default VFS, set once at registration

// Whether a call that `fault` hits fails now; counts down and counts failures.
bool Hit(FaultVfs::Fault fault) {
  if (g_fault.load() != static_cast<int>(fault)) return false;
  if (g_countdown.fetch_sub(1) > 0) return false;
  g_countdown.store(0);
  g_failures.fetch_add(1);
  return true;
}

// The file as SQLite sees it: our methods, then the default VFS's file right behind.
struct FaultFile {
  sqlite3_file base;
  sqlite3_file* real;
};

sqlite3_file* Real(sqlite3_file* f) { return reinterpret_cast<FaultFile*>(f)->real; }

int Close(sqlite3_file* f) { return Real(f)->pMethods->xClose(Real(f)); }
int Read(sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
  return Real(f)->pMethods->xRead(Real(f), buf, n, off);
}
// kKill: the process ends here, as under kill -9, with the write not done.
void KillIfHit() {
  if (Hit(FaultVfs::Fault::kKill)) raise(SIGKILL);
}

int Write(sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
  KillIfHit();
  if (Hit(FaultVfs::Fault::kFull)) return SQLITE_FULL;
  if (Hit(FaultVfs::Fault::kIoError)) return SQLITE_IOERR_WRITE;
  return Real(f)->pMethods->xWrite(Real(f), buf, n, off);
}
int Truncate(sqlite3_file* f, sqlite3_int64 size) {
  KillIfHit();
  if (Hit(FaultVfs::Fault::kFull)) return SQLITE_FULL;
  if (Hit(FaultVfs::Fault::kIoError)) return SQLITE_IOERR_TRUNCATE;
  return Real(f)->pMethods->xTruncate(Real(f), size);
}
int Sync(sqlite3_file* f, int flags) {
  KillIfHit();
  if (Hit(FaultVfs::Fault::kFull)) return SQLITE_FULL;
  if (Hit(FaultVfs::Fault::kIoError)) return SQLITE_IOERR_FSYNC;
  return Real(f)->pMethods->xSync(Real(f), flags);
}
int FileSize(sqlite3_file* f, sqlite3_int64* size) {
  return Real(f)->pMethods->xFileSize(Real(f), size);
}
int Lock(sqlite3_file* f, int level) {
  if (level > SQLITE_LOCK_SHARED && Hit(FaultVfs::Fault::kBusy)) return SQLITE_BUSY;
  return Real(f)->pMethods->xLock(Real(f), level);
}
int Unlock(sqlite3_file* f, int level) { return Real(f)->pMethods->xUnlock(Real(f), level); }
int CheckReservedLock(sqlite3_file* f, int* out) {
  return Real(f)->pMethods->xCheckReservedLock(Real(f), out);
}
int FileControl(sqlite3_file* f, int op, void* arg) {
  return Real(f)->pMethods->xFileControl(Real(f), op, arg);
}
int SectorSize(sqlite3_file* f) { return Real(f)->pMethods->xSectorSize(Real(f)); }
int DeviceCharacteristics(sqlite3_file* f) {
  return Real(f)->pMethods->xDeviceCharacteristics(Real(f));
}
int ShmMap(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
  return Real(f)->pMethods->xShmMap(Real(f), region, size, extend, out);
}
int ShmLock(sqlite3_file* f, int offset, int n, int flags) {
  if ((flags & SQLITE_SHM_LOCK) && (flags & SQLITE_SHM_EXCLUSIVE) && Hit(FaultVfs::Fault::kBusy)) {
    return SQLITE_BUSY;
  }
  return Real(f)->pMethods->xShmLock(Real(f), offset, n, flags);
}
void ShmBarrier(sqlite3_file* f) { Real(f)->pMethods->xShmBarrier(Real(f)); }
int ShmUnmap(sqlite3_file* f, int delete_flag) {
  return Real(f)->pMethods->xShmUnmap(Real(f), delete_flag);
}
int Fetch(sqlite3_file* f, sqlite3_int64 off, int n, void** out) {
  if (Real(f)->pMethods->iVersion < 3) {
    *out = nullptr;
    return SQLITE_OK;
  }
  return Real(f)->pMethods->xFetch(Real(f), off, n, out);
}
int Unfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
  if (Real(f)->pMethods->iVersion < 3) return SQLITE_OK;
  return Real(f)->pMethods->xUnfetch(Real(f), off, p);
}

const sqlite3_io_methods kIoMethods = {3,
                                       Close,
                                       Read,
                                       Write,
                                       Truncate,
                                       Sync,
                                       FileSize,
                                       Lock,
                                       Unlock,
                                       CheckReservedLock,
                                       FileControl,
                                       SectorSize,
                                       DeviceCharacteristics,
                                       ShmMap,
                                       ShmLock,
                                       ShmBarrier,
                                       ShmUnmap,
                                       Fetch,
                                       Unfetch};

int Open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* file, int flags, int* out_flags) {
  auto* f = reinterpret_cast<FaultFile*>(file);
  f->real = reinterpret_cast<sqlite3_file*>(f + 1);
  f->base.pMethods = nullptr;
  const int rc = g_root->xOpen(g_root, name, f->real, flags, out_flags);
  // SQLite calls xClose only when pMethods is set, as the default VFS leaves it on failure.
  if (f->real->pMethods != nullptr) f->base.pMethods = &kIoMethods;
  return rc;
}
int Delete(sqlite3_vfs*, const char* name, int sync_dir) {
  return g_root->xDelete(g_root, name, sync_dir);
}
int Access(sqlite3_vfs*, const char* name, int flags, int* out) {
  return g_root->xAccess(g_root, name, flags, out);
}
int FullPathname(sqlite3_vfs*, const char* name, int n, char* out) {
  return g_root->xFullPathname(g_root, name, n, out);
}
void* DlOpen(sqlite3_vfs*, const char* name) { return g_root->xDlOpen(g_root, name); }
void DlError(sqlite3_vfs*, int n, char* out) { g_root->xDlError(g_root, n, out); }
void (*DlSym(sqlite3_vfs*, void* handle, const char* symbol))(void) {
  return g_root->xDlSym(g_root, handle, symbol);
}
void DlClose(sqlite3_vfs*, void* handle) { g_root->xDlClose(g_root, handle); }
int Randomness(sqlite3_vfs*, int n, char* out) { return g_root->xRandomness(g_root, n, out); }
int Sleep(sqlite3_vfs*, int us) { return g_root->xSleep(g_root, us); }
int CurrentTime(sqlite3_vfs*, double* out) { return g_root->xCurrentTime(g_root, out); }
int GetLastError(sqlite3_vfs*, int n, char* out) { return g_root->xGetLastError(g_root, n, out); }
int CurrentTimeInt64(sqlite3_vfs*, sqlite3_int64* out) {
  return g_root->xCurrentTimeInt64(g_root, out);
}

}  // namespace

FaultVfs::FaultVfs() {
  g_root = sqlite3_vfs_find(nullptr);
  static sqlite3_vfs vfs = {2,  // no xSetSystemCall: nothing here replaces system calls
                            static_cast<int>(sizeof(FaultFile)) + g_root->szOsFile,
                            g_root->mxPathname,
                            nullptr,
                            kName,
                            nullptr,
                            Open,
                            Delete,
                            Access,
                            FullPathname,
                            DlOpen,
                            DlError,
                            DlSym,
                            DlClose,
                            Randomness,
                            Sleep,
                            CurrentTime,
                            GetLastError,
                            CurrentTimeInt64,
                            nullptr,
                            nullptr,
                            nullptr};
  if (sqlite3_vfs_register(&vfs, /*makeDflt=*/0) != SQLITE_OK) std::abort();
}

FaultVfs& FaultVfs::Get() {
  static FaultVfs vfs;  // registered for the life of the process
  return vfs;
}

const char* FaultVfs::name() const { return kName; }

void FaultVfs::Inject(Fault fault, int64_t after_calls) {
  g_fault.store(static_cast<int>(Fault::kNone));
  g_countdown.store(after_calls);
  g_fault.store(static_cast<int>(fault));
}

int64_t FaultVfs::failures() const { return g_failures.load(); }

}  // namespace trainingd::daemon
