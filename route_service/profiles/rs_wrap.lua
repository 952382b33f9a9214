-- Thin wrappers around the osrm-bindings wheel's stock profiles (car, bicycle, foot).
--
-- The importer runs osrm-extract with LUA_PATH pointing at the wheel's profiles
-- directory, so `require('car')` loads the stock car.lua and its `lib/` helpers
-- without copying them. Our files are named `<vehicle>-<type>.lua` (never car.lua,
-- foot.lua ...) because OSRM puts this directory first on package.path and a file
-- of the same name would shadow the stock profile.

local Wrap = {}

-- The truck every truck profile is checked against (legal and physical limits of
-- ways: maxweight, maxheight, maxwidth, maxlength). A 7.5 t delivery truck.
Wrap.TRUCK = {
  weight_kg = 7500,
  height_m = 3.5,
  width_m = 2.5,
  length_m = 10.0,
  max_speed_kmh = 80,
}

-- Shortest: weigh edges by their length. Turn weights are zeroed in process_turn
-- (car.lua does that itself; bicycle.lua and foot.lua do not).
function Wrap.shortest(profile)
  profile.properties.weight_name = 'distance'
end

-- Truck: car.lua's handlers already compare maxweight/maxheight/maxwidth/maxlength
-- with vehicle_*; we set the truck's values, cap speeds and let `hgv` tags decide
-- access first (hgv=no closes a way, hgv=designated opens it).
function Wrap.truck(profile)
  local t = Wrap.TRUCK
  profile.vehicle_weight = t.weight_kg
  profile.vehicle_height = t.height_m
  profile.vehicle_width = t.width_m
  profile.vehicle_length = t.length_m
  profile.vehicle_max_speed = t.max_speed_kmh
  table.insert(profile.access_tags_hierarchy, 1, 'hgv')
  table.insert(profile.restrictions, 1, 'hgv')
  profile.access_tag_whitelist['hgv'] = true
end

-- maxweight:hgv / maxheight:physical etc. are not read by the stock handlers.
local function truck_limited(way)
  -- Required here, not at the top: lib/measure needs the globals the stock profile sets.
  local Measure = require('lib/measure')
  local weight = Measure.get_max_weight(way:get_value_by_key('maxweight:hgv'))
  if weight and weight < Wrap.TRUCK.weight_kg then
    return true
  end
  local height = Measure.get_max_height(way:get_value_by_key('maxheight:physical'), way)
  return height ~= nil and height < Wrap.TRUCK.height_m
end

-- A profile table from the stock profile `base` with `tweaks` applied to setup().
function Wrap.profile(base, tweaks, options)
  options = options or {}
  local stock = require(base)
  local wrapped = {}
  for key, value in pairs(stock) do
    wrapped[key] = value
  end
  wrapped.setup = function()
    local profile = stock.setup()
    for _, tweak in ipairs(tweaks) do
      tweak(profile)
    end
    return profile
  end
  wrapped.process_turn = function(profile, turn)
    stock.process_turn(profile, turn)
    if profile.properties.weight_name == 'distance' then
      turn.weight = 0
    end
  end
  if options.truck then
    wrapped.process_way = function(profile, way, result, relations)
      if truck_limited(way) then
        return -- the result stays inaccessible in both directions
      end
      stock.process_way(profile, way, result, relations)
    end
  end
  return wrapped
end

return Wrap
