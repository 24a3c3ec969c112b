//! Statistics helpers shared by the engine and the lab (filled as needed).
