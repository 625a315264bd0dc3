// Placeholder until the models land.
namespace wick::models {}
