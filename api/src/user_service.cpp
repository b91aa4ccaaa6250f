// The names of roles and users (user_service.h).
#include "trainingd/api/user_service.h"

namespace trainingd::api {

const char* RoleName(Role role) {
  switch (role) {
    case Role::kViewer:
      return "viewer";
    case Role::kUser:
      return "user";
    case Role::kAdmin:
      return "admin";
  }
  return "viewer";
}

std::optional<Role> ParseRole(std::string_view name) {
  for (Role role : {Role::kViewer, Role::kUser, Role::kAdmin}) {
    if (name == RoleName(role)) return role;
  }
  return std::nullopt;
}

bool IsValidUserName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-'))) return false;
  }
  return true;
}

}  // namespace trainingd::api
